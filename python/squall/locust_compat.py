"""While squall runs a locustfile, `import locust` (and its usual submodules) resolve to squall's
own compatible API, whether or not Locust is installed."""

import sys
import types

from squall import environment, event, exception, http, mqtt_user, shape, user, wait_time


class _Stub:
    """Stand-ins for runner classes that locustfiles only name in isinstance checks."""


def _module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    m.__path__ = []  # a package, so that submodule imports work
    return m


def install():
    api = dict(
        User=user.User, HttpUser=user.HttpUser, FastHttpUser=user.FastHttpUser, TaskSet=user.TaskSet,
        SequentialTaskSet=user.SequentialTaskSet, task=user.task, tag=user.tag, between=wait_time.between,
        constant=wait_time.constant, constant_pacing=wait_time.constant_pacing,
        constant_throughput=wait_time.constant_throughput, events=event.events, LoadTestShape=shape.LoadTestShape,
        run_single_user=_run_single_user, __version__="2.47.0+squall",
    )
    runners = dict(MasterRunner=type("MasterRunner", (_Stub,), {}), WorkerRunner=type("WorkerRunner", (_Stub,), {}),
                   LocalRunner=environment.Runner, Runner=environment.Runner)
    modules = {
        "locust": _module("locust", **api),
        "locust.contrib": _module("locust.contrib"),
        "locust.contrib.fasthttp": _module("locust.contrib.fasthttp", FastHttpUser=user.FastHttpUser,
                                           FastHttpSession=http.HttpSession,
                                           ResponseContextManager=http.ResponseContextManager),
        "locust.contrib.mqtt": _module("locust.contrib.mqtt", MqttUser=mqtt_user.MqttUser,
                                       MqttClient=mqtt_user.MqttClient),
        "locust.clients": _module("locust.clients", HttpSession=http.HttpSession,
                                  ResponseContextManager=http.ResponseContextManager, Response=http.Response),
        "locust.exception": exception,
        "locust.env": _module("locust.env", Environment=environment.Environment),
        "locust.event": _module("locust.event", events=event.events, EventHook=event.EventHook,
                                Events=event.Events),
        "locust.user": _module("locust.user", User=user.User, HttpUser=user.HttpUser, TaskSet=user.TaskSet,
                               SequentialTaskSet=user.SequentialTaskSet, task=user.task, tag=user.tag),
        "locust.user.wait_time": wait_time,
        "locust.user.task": _module("locust.user.task", task=user.task, tag=user.tag, TaskSet=user.TaskSet),
        "locust.runners": _module("locust.runners", **runners),
        "locust.shape": _module("locust.shape", LoadTestShape=shape.LoadTestShape),
    }
    sys.modules.update(modules)
    for name, mod in modules.items():
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, mod)


def _run_single_user(user_class, *args, **kwargs):
    from squall.run_script import run_single_user

    return run_single_user(user_class, *args, **kwargs)
