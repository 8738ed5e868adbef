"""Locust's examples/mqtt/locustfile_custom_mqtt_client.py, with the broker from the environment: an
MqttUser whose client_cls is the file's own MqttClient subclass, whose `_generate_event_name` names the
requests (`mqtt:publish:0` instead of `publish:0:hello/locust`)."""

import os
import time

from locust import task
from locust.contrib.mqtt import MqttClient, MqttUser
from locust.user.wait_time import between


class MyMqttClient(MqttClient):
    def _generate_event_name(self, event_type: str, qos: int, topic: str):
        return f"mqtt:{event_type}:{qos}"


class MyUser(MqttUser):
    host = "127.0.0.1"
    port = int(os.environ["TEST_MQTT_PORT"])
    wait_time = between(0.01, 0.1)
    client_cls: type[MqttClient] = MyMqttClient

    def on_start(self):
        time.sleep(1)  # the example's way to let the client connect (5 s there)

    @task
    def say_hello(self):
        self.client.publish("hello/locust", b"hello world locust custom client")
