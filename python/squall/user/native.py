"""Native users: a user whose tasks are only requests with fixed arguments runs them in the engine,
without a turn of Python per request (crates/squall-engine/src/script/native.rs).

A task qualifies when its bytecode is nothing but calls `self.client.<verb>(<constants>)` whose results
are dropped, e.g.

    @task(3)
    def items(self):
        self.client.get("/items", name="items")
        self.client.post("/cart", json={"id": 1})

and the user qualifies when every one of its tasks does, and nothing else would see what Python
skips: no `events.request` listener, no session hook or user `context()`, squall's own HttpSession or
FastHttpSession (no retries, no auth object), a wait time from squall (or Locust) `constant`,
`between`, `constant_pacing`, `constant_throughput` or `poisson` of at most `_LONGEST_NATIVE_WAIT`, and
the closed model (not `--rate`).
Anything else (a task that reads its response, a loop, a global, `catch_response`, a TaskSet) runs in
Python as always: the plan is all or nothing per user, decided after its `on_start`.

What the engine runs is what the session would send: each call is prepared by the session's own code
(`_prepared_call`: the call made with a stand-in for the engine that keeps what it is handed), so its
URL, headers, name, cookies, redirects and timeout are the Python path's. `SQUALL_NATIVE_TASKS=0` turns
native users off (every task in Python).
"""

from __future__ import annotations

import dis
import logging
import math
import os
import sys
import types
from typing import TYPE_CHECKING, Any

from squall._engine import LONGEST_WAIT_S, CallBase, NativePlan, Prepared, UsageError
from squall.clients import HttpSession
from squall.requests_compat import CaseInsensitiveDict

if TYPE_CHECKING:
    from squall.user.users import User

# What a task may call on its client: requests' verbs (graphql and rest judge their responses in Python).
VERBS = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "request"})
# Keywords a native call may carry; any other (catch_response, hooks, ...) needs Python to see the response.
KEYWORDS = frozenset(
    {"name", "params", "data", "json", "headers", "cookies", "timeout", "allow_redirects", "context", "stream"}
)
# The modules whose session code the stand-in runs: squall's own clients.
_SESSION_MODULES = frozenset({"squall.clients", "squall.contrib.fasthttp"})
_OFF = os.environ.get("SQUALL_NATIVE_TASKS", "1") == "0"
logger = logging.getLogger("squall.native")

Call = tuple[str, tuple[Any, ...], dict[str, Any]]  # (verb, positional arguments, keywords)


class _Self:
    """The task's `self` on the symbolic stack."""


class _Client:
    """`self.client`."""


class _Method:
    """`self.client.<verb>`, loaded to be called."""

    def __init__(self, verb: str) -> None:
        self.verb = verb


class _Result:
    """What a call returned (only dropped)."""


class _Const:
    def __init__(self, value: Any) -> None:
        self.value = value


_CACHE: dict[types.CodeType, list[Call] | None] = {}
_SKIPPED = frozenset({"RESUME", "NOP", "CACHE", "PRECALL", "EXTENDED_ARG", "NOT_TAKEN"})


def task_calls(func: Any) -> list[Call] | None:
    """The client calls a task function makes, if it makes nothing else (None otherwise)."""
    if not isinstance(func, types.FunctionType):
        return None
    code = func.__code__
    if code not in _CACHE:
        _CACHE[code] = _read(code)
    return _CACHE[code]


def _read(code: types.CodeType) -> list[Call] | None:
    """Reads the bytecode with a symbolic stack: constants, `self`, `self.client`, its verbs and the
    calls' results are all it may hold; any other instruction (a global, a branch, an attribute of a
    result, a store) and the task is not a plan."""
    flags = code.co_flags
    plain = not flags & (0x04 | 0x08 | 0x20 | 0x80 | 0x100 | 0x200)  # *args, **kw, generator, coroutine, ...
    if code.co_argcount != 1 or code.co_kwonlyargcount or not plain:
        return None
    me = code.co_varnames[0]
    stack: list[Any] = []
    kwnames: tuple[str, ...] = ()
    calls: list[Call] = []
    try:
        for ins in dis.get_instructions(code):
            op = ins.opname
            if op in _SKIPPED:
                continue
            if op in ("LOAD_FAST", "LOAD_FAST_BORROW", "LOAD_FAST_CHECK") and ins.argval == me:
                stack.append(_Self())
            elif op == "LOAD_CONST":
                stack.append(_Const(ins.argval))
            elif op in ("LOAD_ATTR", "LOAD_METHOD"):
                top = stack.pop()
                method = op == "LOAD_METHOD" or "NULL" in ins.argrepr  # 3.12+: LOAD_ATTR loading a method
                if isinstance(top, _Self) and ins.argval == "client" and not method:
                    stack.append(_Client())
                elif isinstance(top, _Client) and ins.argval in VERBS and method:
                    stack.append(_Method(ins.argval))
                else:
                    return None
            elif op == "KW_NAMES":  # its argument indexes the constants (3.11's dis shows no value)
                kwnames = code.co_consts[ins.arg or 0]
            elif op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"):
                items = [_value(stack.pop()) for _ in range(ins.arg or 0)][::-1]
                built: Any = tuple(items) if op == "BUILD_TUPLE" else items if op == "BUILD_LIST" else set(items)
                stack.append(_Const(built))
            elif op == "LIST_EXTEND" and ins.arg == 1:
                extra = _value(stack.pop())
                target = _value(stack[-1])
                if not isinstance(target, list):
                    return None
                target.extend(extra)
            elif op == "BUILD_MAP":
                pairs = [(_value(stack.pop()), _value(stack.pop())) for _ in range(ins.arg or 0)][::-1]
                stack.append(_Const({k: v for v, k in pairs}))
            elif op == "BUILD_CONST_KEY_MAP":
                keys = _value(stack.pop())
                values = [_value(stack.pop()) for _ in range(ins.arg or 0)][::-1]
                stack.append(_Const(dict(zip(keys, values))))
            elif op == "CALL":
                n = ins.arg or 0
                args = [_value(stack.pop()) for _ in range(n)][::-1]
                method = stack.pop()
                if not isinstance(method, _Method):
                    return None
                split = n - len(kwnames)
                calls.append((method.verb, tuple(args[:split]), dict(zip(kwnames, args[split:]))))
                kwnames = ()
                stack.append(_Result())
            elif op == "POP_TOP":
                stack.pop()
            elif op == "RETURN_VALUE":
                if _value(stack.pop()) is not None or stack:
                    return None
            elif op == "RETURN_CONST":
                if ins.argval is not None or stack:
                    return None
            else:
                return None
    except (_NotConstant, IndexError, TypeError):
        return None
    return calls or None


class _NotConstant(Exception):
    pass


def _value(item: Any) -> Any:
    if not isinstance(item, _Const):
        raise _NotConstant
    return item.value


class _Kept(Exception):
    def __init__(self, prepared: Prepared) -> None:
        self.prepared = prepared


class _Standin:
    """Stands for the session's hub while a call is prepared: keeps the Prepared it is handed."""

    def __init__(self) -> None:
        self.engine = self

    def send(self, user_id: int, prepared: Prepared) -> int:
        raise _Kept(prepared)

    def call(self, user_id: int, base: CallBase, *call: Any) -> int:  # (ScriptEngine.call's arguments)
        raise _Kept(base.prepare(*call))


def _prepared_call(client: HttpSession, call: Call) -> Prepared | None:
    verb, args, kwargs = call
    if not set(kwargs) <= KEYWORDS or kwargs.get("stream"):
        # (a streamed call is recorded at its head and its body read by the script: Python's)
        return None
    hub = client.hub
    object.__setattr__(client, "hub", _Standin())  # not HttpSession.__setattr__: its kept calls stay
    try:
        getattr(client, verb)(*args, **kwargs)
    except _Kept as kept:
        return kept.prepared
    except Exception:
        return None  # the call fails in Python too, where the task's error is reported as usual
    finally:
        object.__setattr__(client, "hub", hub)
    return None


_own_sessions: dict[type, bool] = {}  # per session class: its request path is squall's own
_SHADOWING = ("request", *sorted(VERBS))


def _session_ok(client: HttpSession) -> bool:
    """squall's own session as it comes: nothing of it but its settings may see or change a request."""
    cls = type(client)
    own = _own_sessions.get(cls)
    if own is None:
        own = _own_sessions[cls] = cls.__module__ in _SESSION_MODULES and all(
            getattr(getattr(cls, attr, None), "__module__", None) in _SESSION_MODULES
            for attr in ("request", "_prepare", "_joined", *VERBS)
        )
    shadowed = any(attr in client.__dict__ for attr in _SHADOWING)
    return (
        own
        and not shadowed
        and not client.request_event
        and not any(client.hooks.values())
        and client._user_context is None
        and client.auth is None
        and not getattr(client, "max_retries", 0)
    )


def _wait(user: User) -> dict[str, Any] | None:
    if "wait_time" in user.__dict__:
        return None
    spec = getattr(getattr(type(user), "wait_time", None), "squall_wait", None)
    if spec is None:
        return None
    kind, value = spec
    return {kind: value}


# The longest wait a native plan is given (seconds, some 30 years): the engine's waits saturate there (a
# wait of 1e19 s had overflowed its clock, the run aborted, and one of 1e30 s had waited none). A user
# that can wait longer (Locust's `constant(float("inf"))`, a user that only runs its on_start, or 1e300 s)
# runs in Python, whose timers hold any wait (it never ends).
_LONGEST_NATIVE_WAIT = LONGEST_WAIT_S


def _longest(wait: dict[str, Any]) -> float:
    """The longest a wait (`_wait`'s) can be, NaN if it is not numbers. A Poisson wait, an exponential
    of mean 1/rate, is less than 50/rate (the engine's draws stay below 45 means)."""
    [(kind, value)] = wait.items()
    try:
        if kind == "between":
            low, high = map(float, value)
            return max(low, high) if low == low and high == high else math.nan
        if kind == "poisson":
            return 50 / float(value) if value > 0 else math.inf
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def plan_for(user: User) -> NativePlan | None:
    """The user's plan, when all its tasks qualify (see the module's doc); None runs it in Python. Says
    which, and why not, once per class at DEBUG (`--loglevel DEBUG`)."""
    plan, why = _plan(user)
    cls = type(user)
    if cls not in _told:
        _told.add(cls)
        if plan is not None:
            logger.debug(f"{cls.__name__} runs natively: its tasks are requests only, run by the engine")
        else:
            logger.debug(f"{cls.__name__} runs its tasks in Python: {why}")
    return plan


_told: set[type] = set()


def _plan(user: User) -> tuple[NativePlan | None, str]:
    if _OFF:
        return None, "SQUALL_NATIVE_TASKS=0" if sys.version_info >= (3, 11) else "Python before 3.11"
    if user.environment.open_pool is not None:
        return None, "the open model (--rate) starts each iteration"
    client = user.__dict__.get("client")
    wait = _wait(user)
    if wait is None:
        return None, "its wait_time is not one of constant, between, constant_pacing, constant_throughput, poisson"
    if not _longest(wait) <= _LONGEST_NATIVE_WAIT:  # (NaN too)
        return None, f"its wait_time can be longer than a native plan waits ({_LONGEST_NATIVE_WAIT:g} s)"
    if not user.tasks:
        return None, "it has no tasks"
    if not isinstance(client, HttpSession) or not _session_ok(client):
        return None, "its client is not squall's own session as it comes (or something listens to its requests)"
    key = _plan_key(user, client, wait)
    kept = _PLANS.get(key) if key is not None else None
    if kept is not None:
        return kept
    made = _made_plan(user, client, wait)
    if key is not None and len(_PLANS) < _PLANS_KEPT:
        _PLANS[key] = made
    return made


# Plans made, by what they were made from (`_plan_key`): the users of a class whose sessions are set
# alike (all of them, unless on_start sets something per user) share one, made once. Making it per
# user cost 72 µs a user, 0.07 CPU-s of starting 1,000 (time.thread_time around plan_for); a lookup
# costs about 2.
_PLANS: dict[tuple[Any, ...], tuple[NativePlan | None, str]] = {}
_PLANS_KEPT = 1024  # distinct plans kept (a file whose users' sessions differ per user: no more)


def _plan_key(user: User, client: HttpSession, wait: dict[str, Any]) -> tuple[Any, ...] | None:
    """What a plan is made from: the user's tasks and wait, and every setting of its session that
    `HttpSession._prepare` reads (the session is squall's own, unmodified: `_session_ok`). None when
    something is not kept by value (query params or proxies set on the session, headers replaced by
    another mapping, a header whose value cannot be hashed): the plan is made for the user alone."""
    if client.params or client.proxies or not isinstance(client.headers, CaseInsensitiveDict):
        return None
    try:
        key = (
            type(user),
            tuple(user.tasks),
            tuple(wait.items()),
            type(client),
            client.base_url,
            tuple(client.headers._store.values()),
            client.verify,
            client.cert,
            client.timeout,
            client.max_redirects,
            client.default_insecure,
            client.request_name,
        )
        hash(key)
    except TypeError:
        return None
    return key


def _made_plan(user: User, client: HttpSession, wait: dict[str, Any]) -> tuple[NativePlan | None, str]:
    tasks: list[list[Prepared]] = []
    made: dict[int, list[Prepared]] = {}  # per task function: a weight of w lists it w times
    for t in user.tasks:
        if id(t) not in made:
            name = getattr(t, "__name__", repr(t))
            calls = task_calls(t)
            if calls is None:
                return None, f"task {name!r} does more than call self.client with fixed arguments"
            prepared = [_prepared_call(client, c) for c in calls]
            if any(p is None for p in prepared):
                return None, f"task {name!r} makes a call the engine cannot send as it is"
            made[id(t)] = [p for p in prepared if p is not None]
        tasks.append(made[id(t)])
    try:
        return NativePlan(tasks, **wait), ""
    except UsageError as e:
        return None, str(e)


def run(user: User, plan: NativePlan) -> bool:
    """Runs the user's plan in the engine until it ends: True when the test is ending (the user stops),
    False when the user is to go on in Python (a request listener was added)."""
    hub = user.hub
    try:
        op = hub.engine.run_plan(user.client.user_id, plan)  # the session's connections and jar
    except UsageError:
        return False  # a URL the engine refuses: Python reports it where the task makes it
    hub.wait_for(op)
    return bool(user.environment.runner.stopping)


if sys.version_info < (3, 11):  # bytecode before 3.11 calls differently: every user runs in Python
    _OFF = True
