"""`MqttUser` for locustfiles, compatible with Locust's `locust.contrib.mqtt.MqttUser`: `self.client`
(also `self.mqtt`) connects, publishes and subscribes like a paho client, but its I/O runs in the
engine, which times every operation and records it in the same table as HTTP users (`MQTT connect`,
`MQTT publish:QOS:TOPIC`, `MQTT subscribe:QOS:FILTER`). A QoS 0 publish counts once the broker
has read it (the PINGRESP to a PINGREQ sent after it).

`publish` returns at once, as paho's does; `info.wait_for_publish()` waits for the acknowledgement.
`connect` and `subscribe` wait for CONNACK and SUBACK when called from a task.

A file's own client class (`client_cls = MyClient`, a subclass of `MqttClient`) is made with Locust's
keywords (`environment=`, `client_id=`, `protocol=`, `transport=`, `use_loop_selectors=`), and its
`_generate_event_name(event_type, qos, topic)`, if it has one, names its publishes and subscriptions in
the statistics (Locust's default: `publish:QOS:TOPIC`)."""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Callable

from greenlet import getcurrent, greenlet

from squall.user.users import User

if TYPE_CHECKING:
    from squall._engine import Completion
    from squall.env import Environment
    from squall.runtime.hub import Hub

# paho's callbacks, called with paho's arguments (client, userdata, ...).
Callback = Callable[..., Any]

MQTTv311, MQTTv5 = 4, 5
# The MqttUser whose client is being made (MqttUser.__init__): a client class made with Locust's keywords
# (environment=, client_id=, ...) does not name its user.
_making: ContextVar[User | None] = ContextVar("squall_mqtt_user", default=None)
CONNECT_TIMEOUT = 10.0  # seconds for the CONNACK
MQTT_ERR_SUCCESS, MQTT_ERR_NO_CONN = 0, 4


class MQTTMessage:
    """A message that arrived on a subscription (paho's attributes)."""

    __slots__ = ("mid", "payload", "qos", "retain", "topic")

    def __init__(self, topic: str, payload: bytes, qos: int) -> None:
        self.topic, self.payload, self.qos, self.retain, self.mid = topic, payload, qos, False, 0


class MQTTMessageInfo:
    """What `publish` returns: `mid`, `rc`, and `wait_for_publish()` / `is_published()`."""

    def __init__(self, hub: Hub, mid: int) -> None:
        self._hub, self.mid, self.rc = hub, mid, MQTT_ERR_SUCCESS
        self._done = False
        self._error: str | None = None
        self._waiters: list[greenlet] = []

    def _complete(self, completion: Completion) -> None:
        self._done, self._error = True, completion.error
        for g in self._waiters:
            self._hub.ready.append((g, None))
        self._waiters = []

    def is_published(self) -> bool:
        return self._done and self._error is None

    def wait_for_publish(self, timeout: float | None = None) -> None:
        """Suspends the calling user until the broker acknowledged the message (or it failed)."""
        if not self._done and getcurrent() is not self._hub.main:
            self._waiters.append(getcurrent())
            self._hub.wait_turn()
        if self._error:
            raise RuntimeError(self._error)


class MqttClient:
    """A paho-like MQTT client whose connection lives in the engine."""

    def __init__(
        self,
        user: User | None = None,
        client_id: str | None = None,
        protocol: int = MQTTv311,
        *,
        environment: Environment | None = None,
        **_: Any,  # paho's other keywords (transport=, ...) and Locust's use_loop_selectors=: the engine's
    ) -> None:
        user = user or _making.get()
        if user is None:
            raise TypeError("an MqttClient belongs to an MqttUser: make it through the user's client_cls")
        self._user = user
        self.environment = environment or user.environment
        self._hub = user.hub
        self.client_id = client_id or "locust-" + "".join(random.choices(string.ascii_letters + string.digits, k=16))
        self.protocol = protocol
        self.username: str | None = None
        self.password: str | None = None
        self.tls = False
        self.on_message: Callback | None = None
        self.on_connect: Callback | None = None
        self.on_publish: Callback | None = None
        self.on_subscribe: Callback | None = None
        self.userdata: Any = None
        self._connected = False
        self._hub.mqtt_clients[user.user_id] = self
        # A subclass's own `_generate_event_name` names the requests; Locust's default is the engine's.
        self._names = type(self)._generate_event_name is not MqttClient._generate_event_name

    def _generate_event_name(self, event_type: str, qos: int, topic: str) -> str:
        """The name of a publish or subscription in the statistics (Locust's): `publish:QOS:TOPIC`."""
        return f"{event_type}:{qos}:{topic}"

    def username_pw_set(self, username: str, password: str | None = None) -> None:
        self.username, self.password = username, password

    def tls_set_context(self, context: Any = None) -> None:
        self.tls = True

    def user_data_set(self, userdata: Any) -> None:
        self.userdata = userdata

    def _watch(self, op_id: int, on_done: Callable[[Completion], None] | None = None) -> int:
        if on_done is not None:
            self._hub.watch(op_id, on_done)
        return op_id

    def connect_async(self, host: str = "localhost", port: int = 1883, keepalive: int = 60, **_: Any) -> int:
        """Starts connecting; operations submitted meanwhile run once connected, in order."""
        broker = host if "://" in host else f"{'mqtts' if self.tls else 'mqtt'}://{host}:{port}"

        def connected(c: Completion) -> None:
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

    def connect(self, host: str = "localhost", port: int = 1883, keepalive: int = 60, **kw: Any) -> int:
        """Connects, and waits for the CONNACK when called from a user. Returns 0, or 5 if refused."""
        mid = self.connect_async(host, port, keepalive, **kw)
        self._wait(mid)
        return MQTT_ERR_SUCCESS if self._connected else 5

    def _wait(self, mid: int) -> None:
        """Suspends the calling user until operation `mid` completes (at once outside a user)."""
        if getcurrent() is not self._hub.main:
            self._hub.wait_for(mid)

    def publish(
        self,
        topic: str,
        payload: str | bytes | bytearray | int | float | None = None,
        qos: int = 0,
        retain: bool = False,
        properties: Any = None,
    ) -> MQTTMessageInfo:
        if payload is None:
            payload = b""
        elif isinstance(payload, str):
            payload = payload.encode()
        elif isinstance(payload, (int, float)):
            payload = str(payload).encode()
        info = MQTTMessageInfo(self._hub, 0)

        def published(c: Completion) -> None:
            info._complete(c)
            if self.on_publish and c.error is None:
                self.on_publish(self, self.userdata, info.mid)

        name = self._generate_event_name("publish", int(qos), topic) if self._names else None
        op = self._hub.engine.mqtt_publish(self._user.user_id, topic, bytes(payload), int(qos), bool(retain), name)
        info.mid = self._watch(op, published)
        return info

    def subscribe(
        self,
        topic: str | tuple[str, int] | list[tuple[str, int]],
        qos: int = 0,
        options: Any = None,
        properties: Any = None,
    ) -> tuple[int, int | None]:
        """Subscribes (a filter, (filter, qos), or a list of them); waits for the SUBACK in a user."""
        topics: Sequence[Any] = (
            [(topic, qos)] if isinstance(topic, str) else [topic] if isinstance(topic[0], str) else topic
        )
        mid = None
        for t, q in topics:
            q = int(q) if isinstance(q, int) else int(qos)
            name = self._generate_event_name("subscribe", q, t) if self._names else None
            mid = self._hub.engine.mqtt_subscribe(self._user.user_id, t, q, name)
        if mid is not None:
            self._wait(mid)
        if self.on_subscribe:
            self.on_subscribe(self, self.userdata, mid, [qos])
        return MQTT_ERR_SUCCESS, mid

    def disconnect(self, *_: Any, **__: Any) -> int:
        self._connected = False
        return self._hub.engine.mqtt_disconnect(self._user.user_id)

    def is_connected(self) -> bool:
        return self._connected

    def loop_start(self) -> int:
        return MQTT_ERR_SUCCESS  # the engine runs the network loop

    def loop_stop(self, *_: Any) -> int:
        return MQTT_ERR_SUCCESS

    def _deliver(self, topic: str, payload: bytes, qos: int) -> None:
        if self.on_message:
            self.on_message(self, self.userdata, MQTTMessage(topic, payload, qos))


class MqttUser(User):
    """Locust's MqttUser: `host` and `port` of the broker (or `host = "mqtt://h:p"`, or `-H mqtt://h:p`)."""

    abstract = True
    host: str | None = "localhost"
    mqtt_host = True  # -H mqtt://... is this user's broker (User.__init__)
    port = 1883
    transport = "tcp"
    tls_context: Any = None
    client_cls: type[MqttClient] = MqttClient
    ws_path = "/mqtt"
    use_loop_selectors = False
    client_id: str | None = None
    username: str | None = None
    password: str | None = None
    protocol = MQTTv311
    keepalive = 60
    client: MqttClient

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        making = _making.set(self)
        try:  # as Locust makes it, so that a file's own client class gets the keywords it expects
            self.client = self.client_cls(
                environment=self.environment,
                transport=self.transport,
                client_id=self.client_id,
                protocol=self.protocol,
                use_loop_selectors=self.use_loop_selectors,
            )
        finally:
            _making.reset(making)
        self.mqtt = self.client
        if self.tls_context:
            self.client.tls_set_context(self.tls_context)
        if self.username:
            self.client.username_pw_set(self.username, self.password)
        # `-H mqtt://...` won over the class's host (User.__init__); an http:// one is the HTTP users'.
        self.client.connect_async(host=self.host or "localhost", port=self.port, keepalive=self.keepalive)
