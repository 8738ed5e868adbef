"""The paho-mqtt peer, written the efficient way: one process, one selector loop driving every client's
socket (no thread per client, no network thread), publishing through paho's own client.

The window per client: QoS 0, 100 messages handed to paho and not yet written to the socket (paho calls
on_publish for a QoS 0 message when it has written it; publish() writes at once when the socket takes
it); QoS 1, one message in flight (on_publish at its PUBACK; paho's max_inflight_messages agrees). Each
turn tops up the windows that may have room (a hundred publishes at most per client: QoS 0 windows free
up as fast as publish() writes), then polls the sockets: without waiting while a client has room;
blocking, until a socket is readable (PUBACKs) or writable again, only when every window is full. Only
the clients the poll reported (or that still had room) are topped up next: no pass over all 100
clients for each PUBACK.

Prints one JSON line: {"published": N, "failed": F, "disconnects": D, "outstanding": O, "seconds": S}.
published: on_publish calls (QoS 0: written to the socket; QoS 1: acknowledged); failed: publishes paho
refused (no connection, lost connection); disconnects: connections lost during the run; outstanding:
messages in the windows at the end (QoS 0: queued in paho, unwritten; QoS 1: sent, not acknowledged).

Usage: paho_publisher.py HOST PORT CLIENTS QOS SECONDS PAYLOAD_BYTES
"""

import json
import os
import selectors
import sys
import time

import paho.mqtt.client as mqtt

host, port, clients, qos, seconds, size = (
    sys.argv[1],
    int(sys.argv[2]),
    int(sys.argv[3]),
    int(sys.argv[4]),
    float(sys.argv[5]),
    int(sys.argv[6]),
)
payload = b"x" * size
depth = 1 if qos else 100  # messages handed to a client and not yet written (QoS 0) or acknowledged (QoS 1)
OK = (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_AGAIN)  # AGAIN: queued in paho, the socket full for now
published = failed = disconnects = 0
in_flight = {}


def on_publish(client, userdata, mid, reason_code=None, properties=None):
    global published
    published += 1
    in_flight[client] -= 1


def on_disconnect(client, userdata, flags, reason_code=None, properties=None):
    global disconnects
    disconnects += 1


sel = selectors.DefaultSelector()
conns, socks = [], {}
for i in range(clients):
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"paho-bench-{i}")
    c.on_publish = on_publish
    c.on_disconnect = on_disconnect
    c.max_queued_messages_set(0)  # no limit: the window limits
    c.max_inflight_messages_set(depth)  # QoS 1: as many sent unacknowledged as the window holds
    c.connect(host, port, keepalive=60)
    socks[c] = c.socket()
    sel.register(socks[c], selectors.EVENT_READ, c)
    in_flight[c] = 0
    conns.append(c)
deadline = time.monotonic() + 30
while not all(c.is_connected() for c in conns):  # every CONNACK
    assert time.monotonic() < deadline, "no CONNACK from the broker within 30 s"
    for key, _ in sel.select(0.1):
        key.data.loop_read()
topics = {c: f"bench/{c._client_id.decode()}" for c in conns}

start = time.monotonic()
end = start + seconds
next_misc = start + 1.0
live = set(conns)
due = dict.fromkeys(conns)  # the clients whose window may have room, in order (a dict as an ordered set)
while live:
    now = time.monotonic()
    if now >= end:
        break
    room = {}
    for c in due:
        if time.monotonic() >= end:  # a turn of 100 clients x 100 publishes takes a while
            break
        if c not in live:
            continue
        for _ in range(depth - in_flight[c]):  # publish() may write, and call on_publish, at once
            in_flight[c] += 1
            rc = c.publish(topics[c], payload, qos=qos).rc
            if rc not in OK:
                failed += 1
                in_flight[c] -= 1
                break
        if not c.is_connected():  # lost (on_disconnect counted it): paho closed its socket
            live.discard(c)
            sel.unregister(socks[c])
            continue
        if in_flight[c] < depth:  # QoS 0: the socket took them all, on_publish freed the window
            room[c] = None
        wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if c.want_write() else 0)
        if sel.get_key(socks[c]).events != wanted:
            sel.modify(socks[c], wanted, c)
    due = room
    # Wait only when no client can publish: for a PUBACK (QoS 1) or room in a socket's buffer.
    for key, mask in sel.select(0 if room else max(0.0, min(end, next_misc) - time.monotonic())):
        c = key.data
        if mask & selectors.EVENT_READ:
            c.loop_read()
        if mask & selectors.EVENT_WRITE:
            c.loop_write()
        due[c] = None  # on_publish may have freed its window
    if now >= next_misc:  # keep-alive and timeouts, as paho's own loop does
        for c in live:
            c.loop_misc()
        next_misc = now + 1.0
elapsed = time.monotonic() - start
outstanding = sum(in_flight.values())
print(
    json.dumps(
        {
            "published": published,
            "failed": failed,
            "disconnects": disconnects,
            "outstanding": outstanding,
            "seconds": elapsed,
        }
    ),
    flush=True,
)
os._exit(0)  # skip paho's teardown of a hundred clients with full queues
