"""One data file per worker, chosen by `runner.worker_index` (what Locust's worker_index.py does, with
locust-plugins' CSV reader): in one process the index is 0 and the count 1, so mythings_0.csv is read.
Importing locust_plugins needs `locust.argument_parser` (its parser listener is annotated with
LocustArgumentParser) and adds its options; its `quitting` check (--check-fail-ratio) judges the run.
(Its `-i` is not used here: when it quits the runner, Locust's CSV files come out empty.)"""

import os

from _bounded import count
from locust import HttpUser, constant, events, runners, task
from locust_plugins import csvreader

HERE = os.path.dirname(os.path.abspath(__file__))


class Reader(HttpUser):
    wait_time = constant(0)
    rows: csvreader.CSVDictReader

    def on_start(self):
        runner = self.environment.runner
        self.client.get(f"/worker/{runner.worker_index}/of/{runner.worker_count}")

    @task
    def next_row(self):
        count(self)
        row = next(self.rows)
        self.client.get(f"/thing/{row['name']}", params={"size": row["size"]})


@events.init.add_listener
def pick_file(environment, **_kw):
    if not isinstance(environment.runner, runners.MasterRunner):
        Reader.rows = csvreader.CSVDictReader(os.path.join(HERE, f"mythings_{environment.runner.worker_index}.csv"))
