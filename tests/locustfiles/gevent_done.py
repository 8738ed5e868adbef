"""Imported by the gevent_* locustfiles: the run ends once every user has stopped (Locust would go on
until -t), and what the file recorded is written to $SQUALL_TEST_OUT when the run quits."""

import json
import os

import gevent
from locust import events

record = {}
_stopped = []


def user_done(user):
    _stopped.append(user)
    if len(_stopped) == user.environment.parsed_options.num_users:
        # Locust's quit() kills every user greenlet, this one first, so it must run in its own.
        gevent.spawn(user.environment.runner.quit)


@events.quitting.add_listener
def _write(**_kw):
    with open(os.environ["SQUALL_TEST_OUT"], "w") as f:
        json.dump(record, f)
