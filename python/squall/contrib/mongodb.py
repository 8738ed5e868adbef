"""`locust.contrib.mongodb`: `MongoDBUser`, whose `self.client` is a pymongo `MongoClient` (made from the
class's `conn_string`, with `db_name` as `self.client.db`) with `execute_query(collection, query)`: a
`MONGODB QUERY` request that runs `find` and reads every document, timed in whole milliseconds; a
PyMongoError is its failure (Locust's names and rounding). pymongo's sockets are gevent's under squall
as under Locust, so users waiting on the server wait together."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from squall.event import events
from squall.user.users import User

if TYPE_CHECKING:
    from squall.env import Environment


class MongoDBClient(MongoClient):
    def __init__(self, conn_string: str, db_name: str) -> None:
        super().__init__(conn_string)
        self.db = self[db_name]

    def execute_query(self, collection_name: str, query: dict[str, Any]) -> None:
        start = time.time()
        exception: PyMongoError | None = None
        try:
            list(self.db[collection_name].find(query))  # find() is lazy: reading the documents runs it
        except PyMongoError as e:
            exception = e
        events.request.fire(
            request_type="MONGODB",
            name="QUERY",
            response_time=int((time.time() - start) * 1000),
            response_length=0,
            exception=exception,
        )


class MongoDBUser(User):
    """Set `conn_string` and `db_name` on the class; the client closes when the user stops."""

    abstract = True
    conn_string: str
    db_name: str

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.client = MongoDBClient(conn_string=self.conn_string, db_name=self.db_name)

    def on_stop(self) -> None:
        self.client.close()
