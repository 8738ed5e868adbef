"""A DNSUser (locust.contrib.dns) as Locust's examples/dns_ex.py writes one: each task asks the server
on 127.0.0.1:DNS_PORT (tests/servers/dns_server.py) over UDP for a name answered after DNS_MS ms, over
TCP for one answered at once, and over UDP for a name without an answer (renamed: a failure)."""

import os

import dns.message
import dns.rdatatype
from locust import constant, task
from locust.contrib.dns import DNSUser

PORT = int(os.environ["DNS_PORT"])
MS = int(os.environ.get("DNS_MS", "20"))


class Resolver(DNSUser):
    wait_time = constant(0.01)

    @task(3)
    def slow(self):
        self.client.udp(dns.message.make_query(f"d{MS}.squall.test", dns.rdatatype.A), "127.0.0.1", port=PORT)

    @task
    def tcp(self):
        self.client.tcp(dns.message.make_query("d0.squall.test", dns.rdatatype.A), "127.0.0.1", port=PORT)

    @task
    def missing(self):
        query = dns.message.make_query("missing.squall.test", dns.rdatatype.A)
        self.client.udp(query, "127.0.0.1", port=PORT, name="no answer")
