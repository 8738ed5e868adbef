"""`MqttUser` for locustfiles, compatible with Locust's `locust.contrib.mqtt.MqttUser`: `self.client`
(also `self.mqtt`) connects, publishes and subscribes like a paho client, but its I/O runs in the
engine, which times every operation and records it in the same table as HTTP users (`MQTT connect`,
`MQTT publish:QOS:TOPIC`, `MQTT subscribe:QOS:FILTER`). A QoS 0 publish counts once the broker
has read it (the PINGRESP to a PINGREQ sent after it).

`publish` returns at once, as paho's does; `info.wait_for_publish()` waits for the acknowledgement.
`connect` and `subscribe` wait for CONNACK and SUBACK when called from a task."""

import random
import string

from greenlet import getcurrent

from squall.user.users import User

MQTTv311, MQTTv5 = 4, 5
CONNECT_TIMEOUT = 10.0  # seconds for the CONNACK
MQTT_ERR_SUCCESS, MQTT_ERR_NO_CONN = 0, 4


class MQTTMessage:
    """A message that arrived on a subscription (paho's attributes)."""

    __slots__ = ("mid", "payload", "qos", "retain", "topic")

    def __init__(self, topic, payload, qos):
        self.topic, self.payload, self.qos, self.retain, self.mid = topic, payload, qos, False, 0


class MQTTMessageInfo:
    """What `publish` returns: `mid`, `rc`, and `wait_for_publish()` / `is_published()`."""

    def __init__(self, hub, mid):
        self._hub, self.mid, self.rc = hub, mid, MQTT_ERR_SUCCESS
        self._done, self._error, self._waiters = False, None, []

    def _complete(self, completion):
        self._done, self._error = True, completion.error
        for g in self._waiters:
            self._hub.ready.append((g, None))
        self._waiters = []

    def is_published(self):
        return self._done and self._error is None

    def wait_for_publish(self, timeout=None):
        """Suspends the calling user until the broker acknowledged the message (or it failed)."""
        if not self._done and getcurrent() is not self._hub.main:
            self._waiters.append(getcurrent())
            self._hub.main.switch()
        if self._error:
            raise RuntimeError(self._error)


class MqttClient:
    """A paho-like MQTT client whose connection lives in the engine."""

    def __init__(self, user, client_id=None, protocol=MQTTv311):
        self._user = user
        self._hub = user.hub
        self.client_id = client_id or "locust-" + "".join(random.choices(string.ascii_letters + string.digits, k=16))
        self.protocol = protocol
        self.username = self.password = None
        self.tls = False
        self.on_message = self.on_connect = self.on_publish = self.on_subscribe = None
        self.userdata = None
        self._connected = False
        self._hub.mqtt_clients[user.user_id] = self

    def username_pw_set(self, username, password=None):
        self.username, self.password = username, password

    def tls_set_context(self, context=None):
        self.tls = True

    def user_data_set(self, userdata):
        self.userdata = userdata

    def _watch(self, op_id, on_done=None):
        if on_done is not None:
            self._hub.watch(op_id, on_done)
        return op_id

    def connect_async(self, host="localhost", port=1883, keepalive=60, **_):
        """Starts connecting; operations submitted meanwhile run once connected, in order."""
        broker = host if "://" in host else f"{'mqtts' if self.tls else 'mqtt'}://{host}:{port}"

        def connected(c):
            self._connected = c.error is None
            if self.on_connect:
                self.on_connect(self, self.userdata, {}, 0 if self._connected else 5)

        version = "5" if self.protocol == MQTTv5 else "3.1.1"
        op = self._hub.engine.mqtt_connect(
            self._user.user_id,
            broker,
            self.client_id,
            self.username,
            self.password,
            min(int(keepalive), 65535),
            True,
            version,
            CONNECT_TIMEOUT,
            False,
        )
        return self._watch(op, connected)

    def connect(self, host="localhost", port=1883, keepalive=60, **kw):
        """Connects, and waits for the CONNACK when called from a user. Returns 0, or 5 if refused."""
        mid = self.connect_async(host, port, keepalive, **kw)
        self._wait(mid)
        return MQTT_ERR_SUCCESS if self._connected else 5

    def _wait(self, mid):
        if getcurrent() is not self._hub.main:
            return self._hub.wait_for(mid)
        return None

    def publish(self, topic, payload=None, qos=0, retain=False, properties=None):
        if payload is None:
            payload = b""
        elif isinstance(payload, str):
            payload = payload.encode()
        elif isinstance(payload, (int, float)):
            payload = str(payload).encode()
        info = MQTTMessageInfo(self._hub, 0)

        def published(c):
            info._complete(c)
            if self.on_publish and c.error is None:
                self.on_publish(self, self.userdata, info.mid)

        op = self._hub.engine.mqtt_publish(self._user.user_id, topic, bytes(payload), int(qos), bool(retain))
        info.mid = self._watch(op, published)
        return info

    def subscribe(self, topic, qos=0, options=None, properties=None):
        """Subscribes (a filter, (filter, qos), or a list of them); waits for the SUBACK in a user."""
        topics = [(topic, qos)] if isinstance(topic, str) else [topic] if isinstance(topic[0], str) else topic
        mid = None
        for t, q in topics:
            mid = self._hub.engine.mqtt_subscribe(self._user.user_id, t, int(q) if isinstance(q, int) else int(qos))
        self._wait(mid)
        if self.on_subscribe:
            self.on_subscribe(self, self.userdata, mid, [qos])
        return MQTT_ERR_SUCCESS, mid

    def disconnect(self, *_, **__):
        self._connected = False
        return self._hub.engine.mqtt_disconnect(self._user.user_id)

    def is_connected(self):
        return self._connected

    def loop_start(self):
        return MQTT_ERR_SUCCESS  # the engine runs the network loop

    def loop_stop(self, *_):
        return MQTT_ERR_SUCCESS

    def _deliver(self, topic, payload, qos):
        if self.on_message:
            self.on_message(self, self.userdata, MQTTMessage(topic, payload, qos))


class MqttUser(User):
    """Locust's MqttUser: `host` and `port` of the broker (or `host = "mqtt://h:p"`, or `-H mqtt://h:p`)."""

    abstract = True
    host = "localhost"
    port = 1883
    transport = "tcp"
    tls_context = None
    client_cls = MqttClient
    client_id = None
    username = None
    password = None
    protocol = MQTTv311
    keepalive = 60

    def __init__(self, environment):
        super().__init__(environment)
        self.client = self.client_cls(self, client_id=self.client_id, protocol=self.protocol)
        self.mqtt = self.client
        if self.tls_context:
            self.client.tls_set_context(self.tls_context)
        if self.username:
            self.client.username_pw_set(self.username, self.password)
        # `-H mqtt://...` wins over the class's host; an http:// one belongs to the HTTP users of the run.
        given = environment.host or ""
        host = given if given.startswith(("mqtt://", "mqtts://")) else self.host or "localhost"
        self.client.connect_async(host=host, port=self.port, keepalive=self.keepalive)
