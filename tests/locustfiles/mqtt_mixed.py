"""REST and MQTT users in one run: devices publish, a watcher subscribes, an API user polls."""

import os

from locust import HttpUser, constant, events, task
from locust.contrib.mqtt import MqttUser

PORT = int(os.environ["TEST_MQTT_PORT"])
received = []


class Device(MqttUser):
    host = "127.0.0.1"
    port = PORT
    weight = 2
    wait_time = constant(0.02)

    @task
    def send(self):
        self.client.publish("devices/telemetry", b"21.5", qos=1)

    @task
    def send_and_wait(self):
        info = self.mqtt.publish("devices/confirmed", "22", qos=2)
        info.wait_for_publish()
        assert info.is_published()


class Watcher(MqttUser):
    host = "127.0.0.1"
    port = PORT
    fixed_count = 1
    wait_time = constant(0.5)

    def on_start(self):
        self.client.on_message = lambda client, userdata, message: received.append(message.topic)
        self.client.subscribe("devices/#", qos=1)

    @task
    def idle(self):
        pass


class Api(HttpUser):
    wait_time = constant(0.02)

    @task
    def ok(self):
        self.client.get("/ok")


@events.test_stop.add_listener
def report(**_):
    with open(os.environ["TEST_RECEIVED"], "w") as f:
        f.write(str(len(received)))
