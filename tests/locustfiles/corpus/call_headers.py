"""Per-call headers as the file people write sends them, on both clients: the same auth header in each
call (squall keeps a session's merged headers for repeated additions), more distinct additions than it
keeps (three new X-Client values each task), a session header overridden whatever its case and
(HttpUser) removed with None, JSON bodies with and without headers of their own, an Accept of the
call's over FastHttpSession's JSON one, a JSON body's Content-Type of the call's (merge-patch, JSON:API),
text, bytes and form bodies (each client's own types).
Every request must arrive with exactly the headers Locust sends."""

from _bounded import count
from locust import FastHttpUser, HttpUser, constant


def calls(self):
    count(self)
    self.turn += 1
    client, auth = self.client, self.auth
    client.get(f"/items/{self.turn}", name="/items/[id]", headers=auth)
    for i in range(3):  # (more new additions than squall keeps, over the run: its oldest give way)
        client.get("/items", headers={"X-Client": f"c{self.turn}-{i}", **auth})
    client.get("/items", headers={"x-client": "lower", "AUTHORIZATION": "Bearer upper"})
    client.get("/items", headers=auth)  # the first addition again, after the others
    client.post("/cart", json={"item": self.turn}, headers=auth)
    client.post("/cart", json={"item": self.turn})
    client.post("/cart", json=[self.turn], headers={"Accept": "text/plain", **auth})
    # A JSON body whose type the call gives (merge-patch, JSON:API): kept, whatever its spelling.
    client.patch("/cart", json={"item": None}, headers={"Content-Type": "application/merge-patch+json"})
    client.post("/cart", json={"data": {}}, headers={"content-type": "application/vnd.api+json", **auth})
    client.get("/plain")
    # data= bodies: each client's own Content-Type for text, bytes and form fields (requests gives text
    # and bytes none; geventhttpclient's have a charset), and a call's own kept.
    client.post("/notes", data="a note")
    client.put("/blob", data=b"\x00\x01")
    client.post("/form", data={"q": "a b"})
    client.post("/notes", data="<a/>", headers={"Content-Type": "application/xml"})
    if isinstance(self, HttpUser):  # (requests' merge: a None value removes the session's header)
        client.get("/removed", headers={"x-api-version": None, **auth})


class Requests(HttpUser):
    wait_time = constant(0)
    tasks = [calls]

    def on_start(self):
        self.auth = {"Authorization": "Bearer t0k3n"}
        self.turn = 0
        self.client.headers["X-Api-Version"] = "3"


class Fast(FastHttpUser):
    wait_time = constant(0)
    tasks = [calls]
    default_headers = {"X-Api-Version": "2"}

    def on_start(self):
        self.auth = {"Authorization": "Bearer t0k3n"}
        self.turn = 0
