"""A PostgresUser (locust.contrib.postgres) as Locust's examples/postgres writes one, on the connection
string PG_CONN: three queries in four sleep PG_MS ms in the server, the fourth is refused (division by
zero); the sequences they call count them at the server. The connection commits each query (a refused
one would otherwise fail every later query of its transaction)."""

import os

from locust import constant, task
from locust.contrib.postgres import PostgresUser

MS = int(os.environ.get("PG_MS", "20"))


class Querier(PostgresUser):
    conn_string = os.environ["PG_CONN"]
    wait_time = constant(0.01)

    def on_start(self):
        self.client.connection.autocommit = True

    @task(3)
    def wait(self):
        self.client.execute_query(f"SELECT nextval('waits'), pg_sleep({MS / 1000})")

    @task
    def refused(self):
        self.client.execute_query("SELECT nextval('refusals') / 0")
