"""The paho-mqtt peer, written the efficient way: one process, one selector loop driving every client's
socket (no thread per client), QoS 0 publishes kept 100 deep per client, QoS 1 with one message in
flight per client. Prints one JSON line: {"published": N, "seconds": S}.

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
depth = 1 if qos else 10  # messages handed to a client and not yet written (QoS 0) or acknowledged (QoS 1)
published = 0
in_flight = {}


def on_publish(client, userdata, mid, reason_code=None, properties=None):
    global published
    published += 1
    in_flight[client] -= 1


sel = selectors.DefaultSelector()
conns = []
for i in range(clients):
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"paho-bench-{i}")
    c.on_publish = on_publish
    c.max_queued_messages_set(0)
    c.connect(host, port, keepalive=60)
    c.loop_read()  # CONNACK
    sel.register(c.socket(), selectors.EVENT_READ, c)
    in_flight[c] = 0
    conns.append(c)
while not all(c.is_connected() for c in conns):
    for key, _ in sel.select(0.1):
        key.data.loop_read()

start = time.monotonic()
end = start + seconds
last_misc = start
while True:
    now = time.monotonic()
    if now >= end:
        break
    for c in conns:
        for _ in range(depth - in_flight[c]):  # publish() may write, and call on_publish, at once
            in_flight[c] += 1
            c.publish(f"bench/{c._client_id.decode()}", payload, qos=qos)
        wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if c.want_write() else 0)
        key = sel.get_key(c.socket())
        if key.events != wanted:
            sel.modify(c.socket(), wanted, c)
    for key, mask in sel.select(0.05):
        if mask & selectors.EVENT_READ:
            key.data.loop_read()
        if mask & selectors.EVENT_WRITE:
            key.data.loop_write()
    if now - last_misc > 1.0:
        for c in conns:
            c.loop_misc()
        last_misc = now
elapsed = time.monotonic() - start
print(json.dumps({"published": published, "seconds": elapsed}), flush=True)
os._exit(0)  # skip paho's teardown of a hundred clients with full queues
