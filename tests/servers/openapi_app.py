"""A FastAPI app whose validation is strict, for `squall import openapi`'s ground truth
(tests/test_import_openapi.py): its /openapi.json is imported, the generated file is run against it by
squall and by Locust, and the app counts what it received, per route template and status, so the test
judges the requests by what a strict server made of them, not by the load tool's own report.

What it checks: bounded numbers (ge, gt, le, lt, multiple_of), string patterns and lengths, enums
(Literal), required query parameters and headers, a cookie, nested and recursive bodies, arrays with
minimum and maximum lengths, a discriminated union (oneOf), nullable fields (anyOf with null), dates,
date-times, UUIDs, extra fields refused (extra="forbid"), strict types (no "5" for 5), API keys in a
header, in the query and in a cookie, a bearer token and HTTP basic; a form and a multipart upload,
described in the document as FastAPI would (this app parses them itself: python-multipart, which
FastAPI's own forms need, is not installed); a create (POST /api/items, 201 with the item's `id`) whose
item a later GET, PUT and DELETE on /api/items/{item_id} must find (404 otherwise).

GET /__counts answers [[method, route template, status, count], ...]; GET /__errors the last bodies
of 422 answers (what was refused and why). Run: uvicorn --app-dir tests/servers openapi_app:app
"""

import base64
import collections
import email.parser
import email.policy
import itertools
import json
import re
import uuid
from datetime import date, datetime
from typing import Annotated, Literal, Optional, Union
from urllib.parse import parse_qsl

from _counting import count_requests
from fastapi import Body, Cookie, Depends, FastAPI, Header, HTTPException, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import (
    APIKeyCookie,
    APIKeyHeader,
    APIKeyQuery,
    HTTPAuthorizationCredentials,
    HTTPBasic,
    HTTPBasicCredentials,
    HTTPBearer,
)
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, TypeAdapter, ValidationError

API_KEY, TOKEN, USER, PASSWORD, QUERY_KEY, SESSION = "key-123", "token-456", "ann", "s3cret", "q-789", "sid-0"

app = FastAPI(title="Squall Ground Truth", version="1.0")
counts = count_requests(app)
errors = collections.deque(maxlen=20)
items: dict[int, dict] = {}
next_id = itertools.count(1)


@app.exception_handler(RequestValidationError)
async def refused(request: Request, exc: RequestValidationError):
    detail = json.loads(json.dumps(exc.errors(), default=str))
    errors.append({"method": request.method, "path": request.url.path, "detail": detail})
    return JSONResponse({"detail": detail}, status_code=422)


@app.get("/__errors", include_in_schema=False)
def get_errors():
    return list(errors)


# Where a credential goes only when the operation asks for it: any other request carrying one (the API
# key, a bearer or basic Authorization, the query key, the session cookie) is a secret sent where it was
# not asked for, noted here (GET /__leaks: [[method, path, what], ...]).
SECURED = ("/api/orders", "/api/reports/", "/api/export", "/api/trees")
leaks = collections.Counter()


@app.middleware("http")
async def note_leaks(request: Request, call_next):
    path = request.url.path
    if not path.startswith(SECURED) and not path.startswith("/__"):
        found = [h for h in ("x-api-key", "authorization") if h in request.headers]
        found += ["query key"] if "key" in request.query_params else []
        found += ["cookie sid"] if "sid" in request.cookies else []
        for what in found:
            leaks[(request.method, path, what)] += 1
    return await call_next(request)


@app.get("/__leaks", include_in_schema=False)
def get_leaks():
    return [[m, p, w] for (m, p, w) in sorted(leaks)]


# -- models ---------------------------------------------------------------------------------------------


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Dimensions(Strict):
    width: Annotated[float, Field(gt=0, le=500, multiple_of=0.5)]
    height: Annotated[StrictInt, Field(ge=1, lt=300)]


class ItemIn(Strict):
    name: Annotated[StrictStr, Field(pattern=r"^[A-Z][a-z]{2,15}$")]
    price: Annotated[float, Field(gt=0, le=1000, multiple_of=0.01)]
    quantity: Annotated[StrictInt, Field(ge=5, le=100, multiple_of=5)]
    category: Literal["tools", "toys", "food"]
    tags: Annotated[list[Annotated[StrictStr, Field(min_length=2, max_length=12)]], Field(min_length=1, max_length=3)]
    dimensions: Dimensions
    released: date
    sku: uuid.UUID
    contact: Annotated[StrictStr, Field(pattern=r"^[a-z]+@[a-z]+\.(com|org)$")]
    description: Optional[Annotated[StrictStr, Field(max_length=40)]] = None
    fragile: StrictBool = False


class ItemOut(ItemIn):
    id: int


class Card(Strict):
    kind: Literal["card"]
    number: Annotated[StrictStr, Field(pattern=r"^\d{16}$")]
    expires: Annotated[StrictStr, Field(pattern=r"^(0[1-9]|1[0-2])/\d{2}$")]


class Transfer(Strict):
    kind: Literal["transfer"]
    iban: Annotated[StrictStr, Field(pattern=r"^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$")]


class Line(Strict):
    item_id: Annotated[StrictInt, Field(ge=1)]
    count: Annotated[StrictInt, Field(ge=1, le=9)]


class Order(Strict):
    lines: Annotated[list[Line], Field(min_length=1, max_length=4)]
    payment: Annotated[Union[Card, Transfer], Field(discriminator="kind")]
    deliver_at: datetime
    note: Optional[StrictStr] = None


class Node(Strict):
    label: Annotated[StrictStr, Field(min_length=1, max_length=8)]
    children: Annotated[list["Node"], Field(max_length=2)] = []


class SignupForm(Strict):
    username: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{2,11}$")]
    age: Annotated[int, Field(ge=18, le=99)]
    plan: Literal["free", "pro"]
    newsletter: bool = False


# -- security -------------------------------------------------------------------------------------------

api_key = APIKeyHeader(name="X-API-Key", auto_error=False)
query_key = APIKeyQuery(name="key", auto_error=False)
session_cookie = APIKeyCookie(name="sid", auto_error=False)
bearer = HTTPBearer(auto_error=False)
basic = HTTPBasic(auto_error=False)


def needs_key(key: Annotated[Optional[str], Depends(api_key)]):
    if key != API_KEY:
        raise HTTPException(401, "bad API key")


def needs_query_key(key: Annotated[Optional[str], Depends(query_key)]):
    if key != QUERY_KEY:
        raise HTTPException(401, "bad query key")


def needs_session(sid: Annotated[Optional[str], Depends(session_cookie)]):
    if sid != SESSION:
        raise HTTPException(401, "bad session cookie")


def needs_token(credentials: Annotated[Optional[HTTPAuthorizationCredentials], Depends(bearer)]):
    if credentials is None or credentials.credentials != TOKEN:
        raise HTTPException(401, "bad bearer token")


def needs_basic(credentials: Annotated[Optional[HTTPBasicCredentials], Depends(basic)]):
    if credentials is None or (credentials.username, credentials.password) != (USER, PASSWORD):
        raise HTTPException(401, "bad basic credentials")


# -- the API --------------------------------------------------------------------------------------------


@app.get("/api/items", tags=["items"])
def list_items(
    limit: Annotated[int, Query(ge=1, le=50)],
    x_request_id: Annotated[str, Header(pattern=r"^[0-9a-f]{8}$")],
    sort: Literal["asc", "desc"] = "asc",
    q: Annotated[Optional[str], Query(pattern=r"^[a-z]{3,10}$")] = None,
    tags: Annotated[list[str], Query(max_length=3)] = [],  # noqa: B006 (FastAPI's own idiom)
):
    return list(items.values())[:limit]


@app.post("/api/items", status_code=201, response_model=ItemOut, tags=["items"])
def create_item(item: ItemIn):
    new = {**item.model_dump(mode="json"), "id": next(next_id)}
    items[new["id"]] = new
    return new


@app.get("/api/items/{item_id}", response_model=ItemOut, tags=["items"])
def read_item(item_id: Annotated[int, Path(ge=1)]):
    if item_id not in items:
        raise HTTPException(404, "no such item")
    return items[item_id]


@app.put("/api/items/{item_id}", response_model=ItemOut, tags=["items"])
def replace_item(item_id: Annotated[int, Path(ge=1)], item: ItemIn):
    if item_id not in items:
        raise HTTPException(404, "no such item")
    items[item_id] = {**item.model_dump(mode="json"), "id": item_id}
    return items[item_id]


@app.delete("/api/items/{item_id}", status_code=204, tags=["items"])
def delete_item(item_id: Annotated[int, Path(ge=1)]):
    if items.pop(item_id, None) is None:
        raise HTTPException(404, "no such item")
    return Response(status_code=204)


@app.post("/api/orders", status_code=201, tags=["orders"], dependencies=[Depends(needs_key)])
def place_order(order: Order, x_idempotency_key: Annotated[uuid.UUID, Header()]):
    return {"accepted": len(order.lines)}


@app.get("/api/reports/{day}", tags=["reports"], dependencies=[Depends(needs_token)])
def daily_report(
    day: date,
    region: Annotated[str, Query(pattern=r"^(eu|us|ap)-[a-z]+-\d$")],
    session: Annotated[str, Cookie(pattern=r"^[A-Za-z0-9]{16}$")],
    top: Annotated[int, Query(ge=1, le=10)] = 3,
    ratio: Annotated[Optional[float], Query(gt=0, lt=1)] = None,
):
    return {"day": day.isoformat(), "region": region}


@app.get("/api/export", tags=["reports"], dependencies=[Depends(needs_query_key), Depends(needs_session)])
def export(fmt: Annotated[Literal["csv", "json"], Query(alias="format")] = "csv"):
    return {"format": fmt}


@app.post("/api/trees", tags=["trees"], dependencies=[Depends(needs_basic)])
def plant(tree: Node):
    return {"label": tree.label}


@app.put("/api/settings", tags=["settings"])
def settings(
    values: Annotated[dict[str, Annotated[int, Field(ge=0, le=9)]], Body(min_length=1, max_length=3)],
):
    return values


FORM_SCHEMA = TypeAdapter(SignupForm).json_schema(ref_template="#/components/schemas/{model}")


@app.post(
    "/api/signup",
    tags=["forms"],
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/x-www-form-urlencoded": {"schema": FORM_SCHEMA}},
        }
    },
)
async def signup(request: Request):
    if request.headers.get("content-type", "").split(";")[0] != "application/x-www-form-urlencoded":
        raise RequestValidationError([{"loc": ["body"], "msg": "not a form", "type": "content_type"}])
    fields = dict(parse_qsl((await request.body()).decode(), keep_blank_values=True, strict_parsing=True))
    try:
        form = SignupForm.model_validate(fields)
    except ValidationError as e:
        raise RequestValidationError(e.errors()) from None
    return {"username": form.username}


UPLOAD_SCHEMA = {
    "type": "object",
    "required": ["document", "title"],
    "properties": {
        "document": {"type": "string", "format": "binary"},
        "thumbnail": {"type": "string", "contentMediaType": "image/png"},
        "title": {"type": "string", "minLength": 3, "maxLength": 20, "pattern": "^[A-Za-z ]+$"},
        "pages": {"type": "integer", "minimum": 1, "maximum": 500},
    },
    "additionalProperties": False,
}


@app.post(
    "/api/documents",
    status_code=201,
    tags=["forms"],
    openapi_extra={"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": UPLOAD_SCHEMA}}}},
)
async def upload(request: Request):
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data; boundary="):
        raise RequestValidationError([{"loc": ["body"], "msg": "not multipart", "type": "content_type"}])
    raw = b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + await request.body()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(raw)
    fields, files = {}, {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if part.get_filename() is not None:
            files[name] = part.get_payload(decode=True)
        else:
            fields[name] = part.get_payload(decode=True).decode()
    problems = []
    if "document" not in files:
        problems.append({"loc": ["body", "document"], "msg": "no file", "type": "missing"})
    if set(fields) - {"title", "pages"} or set(files) - {"document", "thumbnail"}:
        problems.append({"loc": ["body"], "msg": f"unexpected {sorted(fields)} {sorted(files)}", "type": "extra"})
    title = fields.get("title", "")
    if not (3 <= len(title) <= 20 and re.fullmatch(r"[A-Za-z ]+", title)):
        problems.append({"loc": ["body", "title"], "msg": f"bad title {title!r}", "type": "title"})
    if "pages" in fields and not (fields["pages"].isdigit() and 1 <= int(fields["pages"]) <= 500):
        problems.append({"loc": ["body", "pages"], "msg": f"bad pages {fields['pages']!r}", "type": "pages"})
    if problems:
        raise RequestValidationError(problems)
    return {"bytes": len(files["document"]), "auth": base64.b64encode(b"ok").decode()}
