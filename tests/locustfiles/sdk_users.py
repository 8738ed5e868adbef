"""Locust's database and vector-store users where no server of theirs runs here: MongoDBUser against a
port nothing listens on (each query a failure, as pymongo's server selection gives up after 200 ms), and
QdrantUser on qdrant-client's own in-process store (`location=":memory:"`: a collection per user, upserts
and searches). MONGO_PORT is the closed port."""

import os
import random

from locust import constant, task
from locust.contrib.mongodb import MongoDBUser
from locust.contrib.qdrant import QdrantUser
from qdrant_client.models import Distance, PointStruct, VectorParams


class Mongo(MongoDBUser):
    conn_string = f"mongodb://127.0.0.1:{os.environ['MONGO_PORT']}/?serverSelectionTimeoutMS=200"
    db_name = "squall"
    wait_time = constant(0.01)

    @task
    def find(self):
        self.client.execute_query("things", {"size": "large"})


class Qdrant(QdrantUser):
    url = None
    client_kwargs = {"location": ":memory:"}
    collection_name = "things"
    vectors_config = VectorParams(size=4, distance=Distance.COSINE)
    wait_time = constant(0.01)

    @task
    def put(self):
        point = PointStruct(id=random.randrange(1000), vector=[random.random() for _ in range(4)], payload={"n": 1})
        self.upsert([point])

    @task
    def find(self):
        self.search(query=[0.1, 0.2, 0.3, 0.4], limit=3)
