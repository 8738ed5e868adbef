"""Exercises the client API; any check that fails raises, and shows up in the exceptions CSV."""

from locust import SequentialTaskSet, constant, task
from locust.contrib.fasthttp import FastHttpUser
from locust.exception import StopUser


class Flow(SequentialTaskSet):
    @task
    def query_params_and_names(self):
        r = self.client.get("/echo", params={"a": "1", "b": "x y"}, name="/echo?[params]")
        assert r.status_code == 200 and r.ok and r.headers["x-query"] == "a=1&b=x+y", r.headers
        # (FastHttpUser's url is the URL the call was given, its params= apart, as in Locust 2.47:
        # tests/locustfiles/corpus/response_urls.py compares the two)
        assert r.url.endswith("/echo") and r.elapsed.total_seconds() > 0

    @task
    def json_and_data(self):
        r = self.client.post("/echo", json={"k": [1, 2]})
        assert r.json() == {"k": [1, 2]} and r.headers["X-Method"] == "POST"
        r = self.client.put("/echo", data={"f": "v"})
        assert r.text == "f=v" and r.headers["x-method"] == "PUT"
        r = self.client.patch("/echo", data=b"\x00\x01")
        assert r.content == b"\x00\x01"

    @task
    def headers_and_cookies(self):
        r = self.client.get("/headers", headers={"X-Custom": "yes"}, cookies={"extra": "1"})
        assert "X-Custom: yes" in r.text and "extra=1" in r.text, r.text
        self.client.get("/set-cookie")
        r = self.client.get("/headers")
        assert "session=abc123" in r.text, r.text  # the session keeps the cookie

    @task
    def login_redirect_keeps_its_cookie(self):
        r = self.client.post("/login", data={"user": "u"}, cookies={"pre": "1"})
        assert r.url.endswith("/headers") and "auth=token1" in r.text and "pre=1" in r.text, r.text
        assert self.client.cookies["auth"] == "token1"

    @task
    def redirects(self):
        r = self.client.get("/redirect")
        assert r.status_code == 200 and r.url.endswith("/ok")
        r = self.client.get("/redirect", allow_redirects=False, name="/redirect (not followed)")
        assert r.status_code == 302 and r.headers["location"] == "/ok"

    @task
    def catch_response(self):
        with self.client.get("/status/404", catch_response=True, name="expected 404") as r:
            if r.status_code == 404:
                r.success()
        with self.client.get("/ok", catch_response=True, name="judged failure") as r:
            r.failure("not what we wanted")
        r = self.client.get("/status/500")
        assert not r.ok
        try:
            r.raise_for_status()
            raise AssertionError("raise_for_status did not raise")
        except Exception as e:
            assert "500" in str(e)

    @task
    def renamed_and_other_methods(self):
        with self.client.rename_request("renamed"):
            self.client.get("/ok?1")
            self.client.get("/ok?2")
        assert self.client.head("/ok").status_code == 200
        assert self.client.delete("/echo").headers["x-method"] == "DELETE"
        assert self.client.options("/echo").status_code == 200
        assert self.client.request("GET", "/ok", timeout=5).text == "ok\n"

    @task
    def done(self):
        raise StopUser()


class ApiUser(FastHttpUser):
    wait_time = constant(0)
    tasks = [Flow]
