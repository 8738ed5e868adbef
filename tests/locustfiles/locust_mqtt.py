"""A locustfile written for Locust's own MqttUser (locust.contrib.mqtt): publishing 100-byte messages
as fast as it can. QoS, host and port come from the environment."""

import os

from locust import constant, task
from locust.contrib.mqtt import MqttUser

QOS = int(os.environ.get("BENCH_QOS", "0"))
PAYLOAD = b"x" * 100


class Publisher(MqttUser):
    host = "127.0.0.1"
    port = int(os.environ.get("BENCH_MQTT_PORT", "1883"))
    wait_time = constant(0)

    @task
    def publish(self):
        self.client.publish(f"bench/{self.client.client_id}", PAYLOAD, qos=QOS)
