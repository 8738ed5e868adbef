"""A WebSocket server (the `websockets` library, asyncio) that counts what it receives and sends, for
`squall bench ws://` to be checked against. Paths:

- `/echo`: each message sent back as it came (text as text, binary as binary)
- `/delay?ms=N`: the same, N ms after the message arrived
- `/close?after=K`: every K-th message on a connection is answered by a close (1001, "bye")
- `/bye?after=K&code=C`: the K-th message on a connection is echoed, and 20 ms later the connection is
  closed (C, "kicked"): a close that comes between two of the client's calls
- `/silent`: messages are read and never answered
- `/big`: each message is answered by the head of a 64 MB binary frame (its payload never comes)
- `/fragments?n=N&size=S`: each message is answered by one message in N fragments of S bytes
- `/ping`: each answer comes after a ping that the client must answer (the pong is awaited)
- `/push?n=N&ms=M`: on connecting, N messages `push I` sent M ms apart; messages are echoed meanwhile
- `/reject`: the handshake is refused with 403; `/plain`: a plain 200, no upgrade

`GET /__counts` answers the counts so far (JSON): connections opened, messages received, replies
sent, closes sent, pongs received, and the bytes of the replies sent; `agents`, the connections by the
first word of their handshake's User-Agent ("squall" for the engine's, "none" without one, as
websocket-client's handshake has none): which client opened them.

usage: python ws_server.py PORT [CERTDIR]  (CERTDIR/cert.pem and key.pem: wss); prints "ready".
"""

import asyncio
import contextlib
import json
import ssl
import sys
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

counts = {"connections": 0, "received": 0, "replies": 0, "closes": 0, "pongs": 0, "reply_bytes": 0, "pushed": 0}
counts["agents"] = {}


def process_request(connection, request):
    path = urlsplit(request.path).path
    if path == "/__counts":
        return connection.respond(HTTPStatus.OK, json.dumps(counts))
    if path == "/reject":
        return connection.respond(HTTPStatus.FORBIDDEN, "no\n")
    if path == "/plain":
        return connection.respond(HTTPStatus.OK, "not a WebSocket\n")
    return None


async def reply(ws, message):
    await ws.send(message)
    counts["replies"] += 1
    counts["reply_bytes"] += len(message if isinstance(message, bytes) else message.encode())


async def push(ws, n, ms):
    with contextlib.suppress(ConnectionClosed):
        for i in range(n):
            await asyncio.sleep(ms / 1000)
            await reply(ws, f"push {i}")
            counts["pushed"] += 1


async def handler(ws):
    counts["connections"] += 1
    agent = (ws.request.headers.get("User-Agent") or "none").split("/")[0].split()[0]
    counts["agents"][agent] = counts["agents"].get(agent, 0) + 1
    with contextlib.suppress(ConnectionClosed):  # a client that leaves without a close frame
        await exchanges(ws)


async def exchanges(ws):
    url = urlsplit(ws.request.path)
    query = {k: int(v[0]) for k, v in parse_qs(url.query).items()}
    on_this = 0
    if url.path == "/push":
        asyncio.get_running_loop().create_task(push(ws, query["n"], query["ms"]))
    async for message in ws:
        counts["received"] += 1
        on_this += 1
        if url.path in ("/echo", "/push"):
            await reply(ws, message)
        elif url.path == "/delay":
            await asyncio.sleep(query["ms"] / 1000)
            await reply(ws, message)
        elif url.path == "/close":
            if on_this % query["after"] == 0:
                counts["closes"] += 1
                await ws.close(1001, "bye")
                return
            await reply(ws, message)
        elif url.path == "/bye":
            await reply(ws, message)
            if on_this == query["after"]:
                await asyncio.sleep(0.02)
                counts["closes"] += 1
                await ws.close(query["code"], "kicked")
                return
        elif url.path == "/silent":
            pass
        elif url.path == "/big":
            ws.transport.write(b"\x82\x7f" + (64 << 20).to_bytes(8, "big"))
        elif url.path == "/fragments":
            await ws.send([b"x" * query["size"]] * query["n"])
            counts["replies"] += 1
            counts["reply_bytes"] += query["size"] * query["n"]
        elif url.path == "/ping":
            await (await ws.ping())
            counts["pongs"] += 1
            await reply(ws, message)


async def main(port, certdir=None):
    tls = None
    if certdir:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(f"{certdir}/cert.pem", f"{certdir}/key.pem")
    async with serve(handler, "127.0.0.1", port, process_request=process_request, ssl=tls, max_size=1 << 20):
        print("ready", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), *sys.argv[2:]))
