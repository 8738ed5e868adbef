"""`locust.contrib.postgres`: `PostgresUser`, whose `self.client` holds a psycopg (3) connection made from
the class's `conn_string`, with `execute_query(query)`: a request named `execute_query` of type
`postgres_success`, or `postgres_failure` with the exception, timed in whole milliseconds (Locust's
names and rounding). psycopg waits on its socket through gevent's patched `select` under squall as under
Locust, so users waiting on the server wait together."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import psycopg

from squall.event import events
from squall.user.users import User

if TYPE_CHECKING:
    from squall.env import Environment


class PostgresClient:
    def __init__(self, conn_string: str) -> None:
        self.connection = psycopg.connect(conn_string)

    def execute_query(self, query: Any) -> None:
        start = time.time()
        exception: Exception | None = None
        try:
            self.connection.execute(query)
        except Exception as e:
            exception = e
        events.request.fire(
            request_type="postgres_failure" if exception else "postgres_success",
            name="execute_query",
            response_time=int((time.time() - start) * 1000),
            response_length=0,
            exception=exception,
        )

    def close(self) -> None:
        self.connection.close()


class PostgresUser(User):
    """Set `conn_string` on the class; the connection closes when the user stops."""

    abstract = True
    conn_string: str

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.client = PostgresClient(conn_string=self.conn_string)

    def on_stop(self) -> None:
        self.client.close()
