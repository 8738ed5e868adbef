"""A FastAPI app for `squall import postman`'s ground truth (tests/test_import_postman.py): the collection
tests/fixtures/postman/shop.postman_collection.json describes it, the imported file is run against it
by squall and by Locust, and the app counts what it received per route template and status.

Each route answers 2xx only when the request is what the collection says: the bearer token of the
collection's auth (from the environment file), HTTP basic from a folder's auth, an API key in a header
(from an environment variable: a variable without a value in the collection) and in the query, no
Authorization at all where the request says `noauth`, the collection's pre-set header, no disabled
header or query parameter, and each body mode: raw JSON, raw text, urlencoded, formdata, GraphQL.

GET /__counts answers [[method, route template, status, count], ...]. Run: uvicorn --app-dir
tests/servers postman_app:app
"""

import base64
import email.parser
import email.policy
import itertools
import json
from urllib.parse import parse_qsl

from _counting import count_requests
from fastapi import FastAPI, HTTPException, Request

TOKEN, USER, PASSWORD, QUERY_KEY = "pm-token-1", "ann", "s3cret", "pm-query-3"
HEADER_KEY = "pm-header-2"  # the test's environment variable API_KEY gives it (the collection does not)

app = FastAPI(title="Postman ground truth")
counts = count_requests(app)
items = {1: {"id": 1, "name": "anvil", "price": 9.5}}
next_id = itertools.count(2)


def common(request: Request, auth: str | None):
    """The collection's pre-set header, no disabled header or parameter, and the auth expected."""
    if request.headers.get("x-client") != "postman-import":
        raise HTTPException(400, "the collection's X-Client header is missing")
    if "x-disabled" in request.headers or "debug" in request.query_params:
        raise HTTPException(400, "a disabled header or query parameter was sent")
    given = request.headers.get("authorization")
    if auth is None:
        if given is not None:
            raise HTTPException(400, "noauth: no Authorization expected")
        return
    if given != auth:
        raise HTTPException(401, f"Authorization {given!r}")


BEARER = f"Bearer {TOKEN}"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


@app.get("/api/items")
def list_items(request: Request):
    common(request, BEARER)
    if request.query_params.get("limit") != "10":
        raise HTTPException(422, "limit=10 expected")
    return list(items.values())


@app.post("/api/items", status_code=201)
async def create_item(request: Request):
    common(request, BEARER)
    body = await request.json()
    if set(body) != {"name", "price"} or not isinstance(body["price"], (int, float)):
        raise HTTPException(422, f"body {body!r}")
    item = {"id": next(next_id), **body}
    items[item["id"]] = item
    return item


@app.get("/api/items/{item_id}")
def get_item(item_id: int, request: Request):
    common(request, BEARER)
    if item_id not in items:
        raise HTTPException(404)
    return items[item_id]


@app.get("/api/public")
def public(request: Request):
    common(request, None)
    return {"ok": True}


@app.get("/api/search")
def search(request: Request):
    common(request, None)  # its own auth, an API key in the query, replaces the collection's
    if request.query_params.get("api_key") != QUERY_KEY or request.query_params.get("q") != "anvil":
        raise HTTPException(401, "api_key and q=anvil expected")
    return [items[1]]


@app.get("/api/keyed")
def keyed(request: Request):
    common(request, None)
    if request.headers.get("x-api-key") != HEADER_KEY:
        raise HTTPException(401, "X-API-Key expected")
    return {"ok": True}


@app.post("/api/login")
async def login(request: Request):
    common(request, BEARER)
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise HTTPException(415)
    form = dict(parse_qsl((await request.body()).decode()))
    if form != {"username": USER, "password": PASSWORD}:
        raise HTTPException(422, f"form {form!r}")
    return {"ok": True}


@app.post("/api/upload")
async def upload(request: Request):
    common(request, BEARER)
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data; boundary="):
        raise HTTPException(415, content_type)
    raw = b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + await request.body()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(raw)
    fields = {part.get_param("name", header="content-disposition"): part for part in message.iter_parts()}
    if set(fields) != {"title", "doc"} or fields["title"].get_content().strip() != "report":
        raise HTTPException(422, f"fields {sorted(fields)}")
    if fields["doc"].get_filename() != "report.txt":
        raise HTTPException(422, "the file field's name")
    return {"ok": True}


@app.post("/graphql")
async def graphql(request: Request):
    common(request, BEARER)
    body = await request.json()
    if not str(body.get("query", "")).lstrip().startswith("query") or body.get("variables") != {"id": 1}:
        raise HTTPException(422, f"body {body!r}")
    return {"data": {"item": items[1]}}


@app.post("/api/notes")
async def notes(request: Request):
    common(request, BEARER)
    if not request.headers.get("content-type", "").startswith("text/plain"):
        raise HTTPException(415)
    if (await request.body()).decode() != "a note for anvil":
        raise HTTPException(422)
    return {"ok": True}


@app.get("/admin/stats")
def stats(request: Request):
    common(request, BASIC)
    return {"items": len(items)}


@app.get("/admin/raw")
def admin_raw(request: Request):
    common(request, BASIC)
    if json.loads(request.query_params.get("filter", "null")) != {"a": 1}:
        raise HTTPException(422)
    return {"ok": True}
