"""One small FastAPI app for the seeds' question, "is async faster, and where does each break?".

`/cases` looks a case up in a slow store (20 ms, as a database call would take) and answers JSON. It
really awaits: `asyncio.sleep` gives the event loop back while it waits, which is what makes the
async server scale (the seed's own "async" endpoint called a blocking function, so it could not).

The same app is served two ways:
- sync: gunicorn with sync workers, through a2wsgi's ASGI-to-WSGI bridge (`wsgi`): each worker handles
  one request at a time, so 2 workers x (1 / 20 ms) = at most 100 requests a second;
- async: uvicorn, one worker (`api`): requests wait concurrently; the limit is the worker's CPU.

    gunicorn -w 2 -k sync -b 127.0.0.1:8001 app:wsgi
    uvicorn --port 8002 app:api
    squall bench http://127.0.0.1:8001/cases --find-limit --json sync.json
    squall bench http://127.0.0.1:8002/cases --find-limit --json async.json
    squall compare sync.json async.json --labels sync,async --html compare.html
"""

from __future__ import annotations

import asyncio
import os

from a2wsgi import ASGIMiddleware
from fastapi import FastAPI

STORE_DELAY = float(os.environ.get("STORE_DELAY_MS", "20")) / 1000

api = FastAPI()


@api.get("/cases")
async def cases() -> dict[str, object]:
    await asyncio.sleep(STORE_DELAY)  # the store's round trip
    return {"cases": [{"id": 1, "country": "BR", "status": "confirmed"}], "total": 1}


wsgi = ASGIMiddleware(api)
