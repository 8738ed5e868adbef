"""Locust's worker_index.py: locust-plugins' CSV reader, one file per worker (`mythings_0.csv` in one
process), chosen by `environment.runner.worker_index` in an `init` listener. Importing locust_plugins
needs `locust.argument_parser` (its parser listener is annotated with LocustArgumentParser) and adds
its options; its `quitting` check (--check-fail-ratio) judges the run. (Its `-i` is not used here:
when it quits the runner, Locust's CSV files come out empty.)"""

import os

from _bounded import count
from locust import HttpUser, constant, events, runners, task
from locust_plugins import csvreader

HERE = os.path.dirname(os.path.abspath(__file__))


class DemoUser(HttpUser):
    wait_time = constant(0)
    reader: csvreader.CSVDictReader

    def on_start(self):
        runner = self.environment.runner
        self.client.get(f"/worker/{runner.worker_index}/of/{runner.worker_count}")

    @task
    def t(self):
        count(self)
        thing = next(self.reader)
        self.client.get(f"/thing/{thing['name']}", params={"size": thing["size"]})


@events.init.add_listener
def on_locust_init(environment, **_kwargs):
    if not isinstance(environment.runner, runners.MasterRunner):
        DemoUser.reader = csvreader.CSVDictReader(os.path.join(HERE, f"mythings_{environment.runner.worker_index}.csv"))
