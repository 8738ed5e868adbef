"""A FastAPI app for `squall import har`'s ground truth (tests/test_import_har.py): a browser records a
journey through it, the server is restarted (new secrets, new ids), and the file imported from the
recording must still get 2xx at every step, counted here per route template and status.

Everything a replay would get wrong is random per server process (secrets): the CSRF value in the
page's hidden form field, the bearer token a login returns (JSON), the double-submit cookie it sets
(`xsrf`, sent back in the X-XSRF-Token header), the cursor a list returns in a header (sent back in
the query), and the items' ids (one is picked from the list, fetched, then ordered with its id in the
path and the body). A stale value is 401 (token), 403 (CSRF, xsrf), 404 (id, cursor) or 422 (body).

Last, the page's form is submitted (a navigation: the CSRF value and the item's id in a urlencoded
body), answered 303 to a receipt page whose id is new each time (404 for an id this process did not
make), which the browser follows, and the client must follow too.

GET /app is the page whose script makes the journey; it loads a stylesheet, a script, an image and a
"third-party" pixel (on localhost rather than 127.0.0.1: another host), which the import leaves out.
GET /__counts answers [[method, route template, status, count], ...].
"""

import secrets
from urllib.parse import parse_qsl

from _counting import count_requests
from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

CSRF = secrets.token_hex(16)
CURSOR = secrets.token_hex(8)
ITEMS = {100_000_000 + secrets.randbelow(900_000_000): name for name in ("anvil", "hammer", "tongs")}
tokens: set[str] = set()
xsrfs: set[str] = set()
app = FastAPI(title="HAR ground truth")
counts = count_requests(app)

PAGE = """<!doctype html>
<html><head><title>Shop</title><link rel="stylesheet" href="/static/app.css"></head>
<body><h1>Shop</h1><img src="/static/logo.png" alt="logo"><img src="http://localhost:{port}/pixel.gif" alt="">
<form id="checkout" method="post" action="/checkout"><input type="hidden" name="csrf_token" value="{csrf}">
<input type="hidden" name="item_id" value=""></form>
<script src="/static/app.js"></script></body></html>
"""

SCRIPT = """
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function journey() {
  const csrf = document.querySelector('input[name=csrf_token]').value;
  await sleep(400);
  const login = await fetch('/api/login', {method: 'POST', headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({username: 'ann', password: 'correct horse'})}).then((r) => r.json());
  const bearer = {Authorization: 'Bearer ' + login.token};
  await sleep(300);
  const listed = await fetch('/api/items', {headers: bearer});
  const cursor = listed.headers.get('X-Page-Cursor');
  const list = await listed.json();
  const id = list.items[1].id;
  await sleep(200);
  await fetch('/api/items/' + id + '?cursor=' + cursor, {headers: bearer});
  const xsrf = document.cookie.split('; ').find((c) => c.startsWith('xsrf=')).slice(5);
  const ordered = await fetch('/api/items/' + id + '/orders', {method: 'POST',
    headers: {...bearer, 'X-CSRF-Token': csrf, 'X-XSRF-Token': xsrf, 'Content-Type': 'application/json'},
    body: JSON.stringify({item_id: id, quantity: 2})});
  if (ordered.status !== 201) return;
  await sleep(300);
  const form = document.getElementById('checkout');
  form.elements.item_id.value = String(id);
  form.submit();  // a navigation: 303 to the receipt's page, which the browser follows
}
journey();
"""
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@app.get("/app")
def page(request: Request):
    return HTMLResponse(PAGE.format(port=request.url.port, csrf=CSRF))


@app.get("/static/app.js")
def script():
    return Response(SCRIPT, media_type="application/javascript")


@app.get("/static/app.css")
def css():
    return Response("h1 { color: teal; }", media_type="text/css")


@app.get("/static/logo.png")
def logo():
    return Response(PNG, media_type="image/png")


@app.get("/pixel.gif")
def pixel():
    return Response(PNG, media_type="image/png")


def bearer(request: Request):
    auth = request.headers.get("authorization", "")
    if not auth.startswith("Bearer ") or auth[7:] not in tokens:
        raise HTTPException(401, "not a token this server issued")


@app.post("/api/login")
async def login(request: Request):
    body = await request.json()
    if body != {"username": "ann", "password": "correct horse"}:
        raise HTTPException(422, "the login's body")
    token, xsrf = secrets.token_hex(20), secrets.token_hex(12)
    tokens.add(token)
    xsrfs.add(xsrf)
    response = JSONResponse({"token": token, "user": "ann"})
    response.set_cookie("xsrf", xsrf, samesite="strict")
    return response


@app.get("/api/items")
def list_items(request: Request):
    bearer(request)
    body = {"items": [{"id": i, "name": n} for i, n in ITEMS.items()]}
    return JSONResponse(body, headers={"X-Page-Cursor": CURSOR})


@app.get("/api/items/{item_id}")
def get_item(item_id: int, request: Request, cursor: str = ""):
    bearer(request)
    if item_id not in ITEMS or cursor != CURSOR:
        raise HTTPException(404, "no such item (or a stale cursor)")
    return {"id": item_id, "name": ITEMS[item_id]}


receipts: set[str] = set()


@app.post("/checkout")
async def checkout(request: Request):
    form = dict(parse_qsl((await request.body()).decode()))
    if form.get("csrf_token") != CSRF:
        raise HTTPException(403, "CSRF")
    if not form.get("item_id", "").isdigit() or int(form["item_id"]) not in ITEMS:
        raise HTTPException(404, "no such item")
    receipt = secrets.token_hex(6)
    receipts.add(receipt)
    return RedirectResponse(f"/receipts/{receipt}", status_code=303)


@app.get("/receipts/{receipt}")
def receipt_page(receipt: str):
    if receipt not in receipts:
        raise HTTPException(404, "no such receipt")
    return HTMLResponse(f"<!doctype html><html><body data-done='1'><p>Receipt {receipt}</p></body></html>")


@app.post("/api/items/{item_id}/orders", status_code=201)
async def order(item_id: int, request: Request):
    bearer(request)
    if request.headers.get("x-csrf-token") != CSRF:
        raise HTTPException(403, "CSRF")
    xsrf = request.headers.get("x-xsrf-token")
    if xsrf not in xsrfs or request.cookies.get("xsrf") != xsrf:
        raise HTTPException(403, "xsrf")
    if item_id not in ITEMS:
        raise HTTPException(404)
    if await request.json() != {"item_id": item_id, "quantity": 2}:
        raise HTTPException(422, "the order's body")
    return {"ordered": item_id}
