"""`squall import postman` against ground truth.

The collection tests/fixtures/postman/shop.postman_collection.json (v2.1, written by hand from the
schema) and its environment file describe tests/servers/postman_app.py: collection, folder and request
auth (bearer, basic, API key in a header and in the query, noauth, inherit), a pre-set header, disabled
headers, query parameters and form fields, every body mode (raw JSON, raw text, urlencoded, formdata
with a file, GraphQL), path variables, a variable without a value (read from the environment), scripts.
The imported file is run by squall and by Locust; the app answers 2xx only to what the collection
means and counts every request per route and status: every route must be called, every answer 2xx."""

import ast
import datetime
import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from support import HERE, CountingApp, counted_between, one_line_error, route_counts, squall, well_formed
from test_locust_corpus import Recorder

FIXTURES = HERE / "fixtures" / "postman"
COLLECTION = FIXTURES / "shop.postman_collection.json"
ENVIRONMENT = FIXTURES / "local.postman_environment.json"
RUN = ["--headless", "-u", "2", "-r", "10", "-t", "4s"]
ROUTES = {
    ("GET", "/api/items"),
    ("POST", "/api/items"),
    ("GET", "/api/items/{item_id}"),
    ("GET", "/api/public"),
    ("GET", "/api/search"),
    ("GET", "/api/keyed"),
    ("POST", "/api/login"),
    ("POST", "/api/upload"),
    ("POST", "/graphql"),
    ("POST", "/api/notes"),
    ("GET", "/admin/stats"),
    ("GET", "/admin/raw"),
}


@pytest.fixture(scope="module")
def app():
    """tests/servers/postman_app.py on a free port, counting what it receives: its URL."""
    server = CountingApp("postman_app")
    yield server.url
    server.stop()


def imported(out, *options):
    p = squall("import", "postman", COLLECTION, "--environment", ENVIRONMENT, "-o", out, *options, timeout=60)
    assert p.returncode == 0, p.stderr
    return p


def judge(got):
    wrong = {k: n for k, n in got.items() if not 200 <= k[2] < 300}
    assert not wrong, wrong
    assert {(m, p) for m, p, _ in got} == ROUTES, got


@pytest.mark.slow
def test_every_request_squall_sends_is_what_the_collection_means(app, tmp_path):
    gen = tmp_path / "gen.py"
    p = imported(gen, "--wait", "0")
    assert "squall import postman: 12 requests: 3 tasks, 9 in 2 flows, 0 left out" in p.stderr, p.stderr
    assert "Postman scripts (pre-request or tests) not run" in p.stderr
    text = gen.read_text()
    ast.parse(text)
    assert 'API_KEY = os.environ.get("API_KEY", "")' in text and "class CatalogueFolder(SequentialTaskSet)" in text
    before = route_counts(app)
    run = squall("-f", gen, *RUN, "-H", app, env={**os.environ, "API_KEY": "pm-header-2"}, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    judge(counted_between(before, route_counts(app)))


@pytest.mark.slow
def test_every_request_locust_sends_is_what_the_collection_means(app, tmp_path):
    gen = tmp_path / "gen.py"
    imported(gen, "--wait", "0")
    before = route_counts(app)
    run = subprocess.run(
        [sys.executable, "-m", "locust", "-f", gen, *RUN, "-H", app],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "API_KEY": "pm-header-2"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    judge(counted_between(before, route_counts(app)))


def test_the_file_says_what_it_chose(tmp_path):
    gen = tmp_path / "gen.py"
    imported(gen)
    text = well_formed(gen)
    assert "Its Postman scripts (pre-request or tests) are not run." in text
    assert "# {{apiKey}}: no value in the collection" in text
    assert "X-Disabled" not in text and '"debug"' not in text and '"remember"' not in text and '"skip"' not in text
    assert '"Authorization": "Basic YW5uOnMzY3JldA=="' in text  # the folder's basic auth, inherited
    assert 'name="/api/items/{item_id}"' in text and '"/api/items/1"' in text
    assert 'files={"doc": ("report.txt", b"", "application/octet-stream")}' in text
    assert '"variables": {"id": 1}' in text


V20 = {
    "info": {"name": "Old", "schema": "https://schema.getpostman.com/json/collection/v2.0.0/collection.json"},
    "auth": {"type": "bearer", "bearer": {"token": "{{secret token}}"}},
    "item": [
        {"name": "one", "request": "https://api.example.com/things?x=1"},
        {
            "name": "two",
            "request": {
                "method": "PUT",
                "url": "https://other.example.org/v1/things/:id",
                "auth": {"type": "basic", "basic": {"username": "u", "password": "{{pw}}"}},
                "body": {"mode": "raw", "raw": "<a>{{pw}}</a>", "options": {"raw": {"language": "xml"}}},
            },
        },
        {"name": "three", "request": {"method": "GET", "url": "{{host}}/x"}, "auth": {"type": "digest"}},
        {"name": "four", "request": {"method": "BREW", "url": "https://api.example.com/pot"}},
        {"name": "five", "request": {"method": "GET", "url": "https://api.example.com/{{$randomCity}}"}},
    ],
}


def test_a_v2_0_collection_with_unresolved_variables_and_other_hosts(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps(V20))
    p = squall("import", "postman", tmp_path / "old.json", "-o", tmp_path / "old.py")
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines()[0] == "squall import postman: 5 requests: 4 tasks, 1 left out", p.stderr
    assert "left out four: its method BREW is not one squall sends" in p.stderr
    assert "dynamic variables sent as written: {{$randomCity}}" in p.stderr
    text = well_formed(tmp_path / "old.py")
    assert 'SECRET_TOKEN = os.environ.get("SECRET_TOKEN", "")' in text and '"Bearer " + SECRET_TOKEN' in text
    assert '"https://other.example.org/v1/things/:id"' in text  # another host: the whole URL
    assert '"Authorization": _basic("u", PW)' in text and "import base64" in text
    assert 'f"{HOST}/x"' in text
    # Sent empty while unset (a broken body, a bare "Bearer "): said at the import and at the run's start.
    unset = [line for line in p.stderr.splitlines() if line.startswith("note: variables without a value")]
    assert unset and "SECRET_TOKEN" in unset[0], p.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_TOKEN", "PW")}
    run = squall("-f", tmp_path / "old.py", "-l", env=env)  # (the file's import is enough: -l lists its users)
    assert run.returncode == 0 and "SECRET_TOKEN is not set: the requests that use it send it empty" in run.stderr, (
        run.stderr
    )


BAD = {
    "har.json": (b'{"log": {"entries": []}}', "is a HAR file"),
    "openapi.json": (b'{"openapi": "3.0.0", "paths": {}}', "is an OpenAPI document"),
    "v1.json": (b'{"id": "x", "name": "n", "requests": [], "order": []}', "is a Postman collection v1"),
    "list.json": (b"[1]", "is not a Postman collection"),
    "empty.json": (b'{"info": {"name": "e"}, "item": []}', "describes no request to import"),
    "truncated.json": (b'{"info": {"name": "e"}, "item": [', "ends before its JSON does"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_collections_are_refused_in_one_line(name, tmp_path):
    data, expected = BAD[name]
    (tmp_path / name).write_bytes(data)
    one_line_error(squall("import", "postman", tmp_path / name, "-o", tmp_path / "out.py"), expected)
    assert not (tmp_path / "out.py").exists()


def test_a_bad_environment_file_is_refused_in_one_line(tmp_path):
    (tmp_path / "env.json").write_text('{"name": "x"}')
    p = squall("import", "postman", COLLECTION, "--environment", tmp_path / "env.json", "--dry-run")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "is not a Postman environment" in p.stderr, p.stderr


def test_the_output_is_never_one_of_the_files_read(tmp_path):
    """-o naming the environment file (or the collection) is refused before anything is written."""
    env = tmp_path / "env.json"
    env.write_bytes(ENVIRONMENT.read_bytes())
    one_line_error(squall("import", "postman", COLLECTION, "--environment", env, "-o", env), "is the environment file")
    assert env.read_bytes() == ENVIRONMENT.read_bytes()


def test_a_query_only_in_the_raw_url_is_read_and_decoded(tmp_path):
    """A URL object with `raw` alone (no host, path or query lists): its query is read from it, its
    percent-encoding undone once, since the client encodes the parameters again."""
    collection = {
        "info": {"name": "Raw", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
        "item": [{"name": "find", "request": {"method": "GET", "url": {"raw": "http://a.example/find?q=a%20b&n=2"}}}],
    }
    (tmp_path / "raw.json").write_text(json.dumps(collection))
    p = squall("import", "postman", tmp_path / "raw.json", "--dry-run")
    assert p.returncode == 0, p.stderr
    assert 'params={"q": "a b", "n": "2"}' in p.stdout and '"/find"' in p.stdout


def test_dynamic_variables_are_made_anew_for_each_request_as_postman_makes_them(tmp_path):
    """`{{$guid}}` in a header, `{{$timestamp}}` and `{{$randomInt}}` in the query, `{{$isoTimestamp}}`
    in a JSON body: each request the recorder received carries its own value, of the kind Postman makes
    (a UUID, the unix time of the run, an integer in 0..1000, an ISO time in UTC); a faker variable
    (`{{$randomCity}}`) goes as written and the summary names it."""
    collection = {
        "info": {"name": "Dynamic", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
        "item": [
            {
                "name": "Send",
                "request": {
                    "method": "POST",
                    "header": [{"key": "X-Request-Id", "value": "{{$guid}}"}],
                    "url": "{{base}}/dyn?t={{$timestamp}}&n={{$randomInt}}&city={{$randomCity}}",
                    "body": {
                        "mode": "raw",
                        "raw": '{"at": "{{$isoTimestamp}}", "ok": true}',
                        "options": {"raw": {"language": "json"}},
                    },
                },
            }
        ],
    }
    source, out = tmp_path / "dynamic.json", tmp_path / "dynamic_locustfile.py"
    source.write_text(json.dumps(collection))
    recorder = Recorder()
    try:
        collection["variable"] = [{"key": "base", "value": recorder.url}]
        source.write_text(json.dumps(collection))
        p = squall("import", "postman", source, "-o", out, "--wait", "0", timeout=60)
        assert p.returncode == 0, p.stderr
        assert "{{$randomCity}}" in p.stderr
        well_formed(out)
        began = time.time()
        run = squall("-f", out, "--headless", "-u", 1, "-r", 10, "-t", "1s", "--only-summary", timeout=60)
        assert run.returncode == 0, run.stderr[-2000:]
        records = [r for r in recorder.log() if r["path"].startswith("/dyn")]
    finally:
        recorder.stop()
    assert len(records) >= 5
    ids = [dict(r["headers"])["x-request-id"] for r in records]
    assert len(set(ids)) == len(ids) and all(uuid.UUID(i).version == 4 for i in ids)
    for r in records:
        query = dict(r["query"])
        assert began - 1 <= int(query["t"]) <= time.time() + 1
        assert 0 <= int(query["n"]) <= 1000
        assert query["city"] == "{{$randomCity}}"
        at = json.loads(r["body"])["at"]
        assert at.endswith("Z") and abs(datetime.datetime.fromisoformat(at[:-1] + "+00:00").timestamp() - began) < 30


def test_names_keep_the_paths_variables_whatever_their_values(tmp_path):
    """`{{baseUrl}}/orders/{{orderId}}` with both valued: the request goes to the value, its name keeps
    `{orderId}` (one row for every order, as `:orderId` gets) and the base URL's path; a URL typed
    without its scheme (Postman takes http://) has no host in its name."""
    collection = {
        "info": {"name": "N", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
        "variable": [{"key": "baseUrl", "value": "http://127.0.0.1:8123/api"}, {"key": "orderId", "value": "1001"}],
        "item": [
            {"name": "order", "request": {"method": "GET", "url": "{{baseUrl}}/orders/{{orderId}}"}},
            {"name": "bare", "request": {"method": "GET", "url": "127.0.0.1:8123/first"}},
            # (a dynamic variable's helper, then a variable without a value: laid out as ruff formats)
            {"name": "flags", "request": {"method": "GET", "url": "{{baseUrl}}/f?on={{$randomBoolean}}&k={{key}}"}},
        ],
    }
    (tmp_path / "n.json").write_text(json.dumps(collection))
    assert squall("import", "postman", tmp_path / "n.json", "-o", tmp_path / "n.py").returncode == 0
    text = well_formed(tmp_path / "n.py")
    assert '"/api/orders/1001", name="/api/orders/{orderId}"' in text, text
    assert 'name="/first"' in text and 'name="127.0.0.1' not in text, text
