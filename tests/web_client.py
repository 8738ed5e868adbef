"""Talking to a dashboard as its own page does: the controls are POSTs with a JSON body, the JSON content
type and the run's token, which the page reads from its own HTML (`"token"` in `#squall-data`); reads are
plain GETs. Tests that drive the dashboard without a browser use these, so that they send what the server
requires of its page (docs/dashboard.md: the dashboard's safety), no more."""

import base64
import json
import re
import urllib.error
import urllib.request

DATA = re.compile(r'<script id="squall-data" type="application/json">(.*?)</script>', re.S)


def _headers(auth):
    return {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}


def token(port, auth=None):
    """The run's token, as the page reads it from the HTML it was served (None if the page has none)."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/", headers=_headers(auth))
    with urllib.request.urlopen(req, timeout=10) as resp:
        found = DATA.search(resp.read().decode())
    return json.loads(found.group(1)).get("token") if found else None


def control(port, action, body=None, auth=None, **headers):
    """POST /api/ACTION as the page sends it: (status, the JSON answer). `body` is JSON'd, or sent as is
    when bytes (`b'{"users": 1e999}'`); `headers` add or replace some (None drops one:
    `**{"X-Squall-Token": None}`)."""
    sent = {"Content-Type": "application/json", **_headers(auth)}
    secret = token(port, auth)
    if secret:
        sent["X-Squall-Token"] = secret
    sent.update(headers)
    sent = {k: v for k, v in sent.items() if v is not None}
    data = body if isinstance(body, bytes) else json.dumps({} if body is None else body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/{action}", data=data, headers=sent, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, {"ok": False, "error": raw.decode(errors="replace")}


def live(port, auth=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/live?cursor=0", headers=_headers(auth))
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())
