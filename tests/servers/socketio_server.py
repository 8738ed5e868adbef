"""A Socket.IO server for SocketIOUser's tests (python-socketio's own server, on uvicorn), after Locust's
examples/socketio/socketio_echo_server.py. Events: `wait` answers `{"ms": N}` after N ms (a `call`);
`send_message` is echoed back to its sender as a `chat_message` event. GET /tally answers what the server
received, {"connect", "wait", "send_message", "peak", "ws_agents"} ("peak": the most `wait` calls in progress
at once since the last /tally; "ws_agents": the WebSocket connections by the first word of their handshake's
User-Agent, "squall" for the engine's, "none" without one, as websocket-client's): the ground truth of what
the load tool sent, how many of its calls overlapped, and which client opened its WebSockets.

usage: python socketio_server.py PORT   (prints "ready" once it listens)
"""

import asyncio
import collections
import json
import sys

import socketio
import uvicorn

sio = socketio.AsyncServer(async_mode="asgi")
counts = collections.Counter()
state = {"waiting": 0, "peak": 0}
ws_agents = collections.Counter()


@sio.event
async def connect(sid, environ):
    counts["connect"] += 1


@sio.event
async def wait(sid, data):
    counts["wait"] += 1
    state["waiting"] += 1
    state["peak"] = max(state["peak"], state["waiting"])
    try:
        await asyncio.sleep(data["ms"] / 1000)
    finally:
        state["waiting"] -= 1
    return "waited"


@sio.event
async def send_message(sid, data):
    counts["send_message"] += 1
    await sio.emit("chat_message", data["message"], to=sid)


async def tally(scope, receive, send):
    body = json.dumps({**counts, "peak": state["peak"], "ws_agents": ws_agents}).encode()
    state["peak"] = state["waiting"]
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def counting(app):
    async def counted(scope, receive, send):
        if scope["type"] == "websocket":
            agent = dict(scope["headers"]).get(b"user-agent", b"none").decode().split("/")[0].split()[0]
            ws_agents[agent] += 1
        await app(scope, receive, send)

    return counted


if __name__ == "__main__":
    app = counting(socketio.ASGIApp(sio, other_asgi_app=tally))
    config = uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", ws="wsproto")
    server = uvicorn.Server(config)
    print("ready", flush=True)
    server.run()
