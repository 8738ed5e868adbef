"""A DNS server for DNSUser's tests, on UDP and TCP of one port (socketserver, a thread per query, so that
queries overlap as a real server's do; dnspython reads and writes the messages). For an A query of
`dN.squall.test` it answers 127.0.0.1 after N ms; other names get NXDOMAIN, no answer. A TXT query of
`tally.squall.test` answers what it received, JSON in one string: {"NAME/udp" or "NAME/tcp": queries,
"peak": the most queries in progress at once since the last tally}, not counted itself: the ground truth
of what the load tool sent, and how many of its queries overlapped.

usage: python dns_server.py PORT   (prints "ready" once it listens)
"""

import collections
import json
import re
import socketserver
import struct
import sys
import threading
import time

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset

lock = threading.Lock()
counts = collections.Counter()
state = {"busy": 0, "peak": 0}


def answer(wire, transport):
    query = dns.message.from_wire(wire)
    reply = dns.message.make_response(query)
    question = query.question[0]
    name = question.name.to_text()
    if name == "tally.squall.test." and question.rdtype == dns.rdatatype.TXT:
        with lock:
            text = json.dumps({**counts, "peak": state["peak"]})
            state["peak"] = state["busy"]
        reply.answer.append(dns.rrset.from_text(question.name, 0, "IN", "TXT", json.dumps(text)))
        return reply.to_wire()
    with lock:
        counts[f"{name}/{transport}"] += 1
        state["busy"] += 1
        state["peak"] = max(state["peak"], state["busy"])
    try:
        delay = re.fullmatch(r"d(\d+)\.squall\.test\.", name)
        if delay and question.rdtype == dns.rdatatype.A:
            time.sleep(int(delay.group(1)) / 1000)
            reply.answer.append(dns.rrset.from_text(question.name, 60, "IN", "A", "127.0.0.1"))
        else:
            reply.set_rcode(dns.rcode.NXDOMAIN)
        return reply.to_wire()
    finally:
        with lock:
            state["busy"] -= 1


class Udp(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        sock.sendto(answer(data, "udp"), self.client_address)


class Tcp(socketserver.BaseRequestHandler):
    def handle(self):
        while header := self.request.recv(2):
            (size,) = struct.unpack("!H", header)
            data = b""
            while len(data) < size:
                chunk = self.request.recv(size - len(data))
                if not chunk:
                    return
                data += chunk
            out = answer(data, "tcp")
            self.request.sendall(struct.pack("!H", len(out)) + out)


class UdpServer(socketserver.ThreadingUDPServer):
    daemon_threads = True


class TcpServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024


if __name__ == "__main__":
    port = int(sys.argv[1])
    udp, tcp = UdpServer(("127.0.0.1", port), Udp), TcpServer(("127.0.0.1", port), Tcp)
    threading.Thread(target=udp.serve_forever, daemon=True).start()
    print("ready", flush=True)
    tcp.serve_forever()
