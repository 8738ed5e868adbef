"""Locust's documented way to set the exit code from the stats, in a `quitting` listener: here 3 above
1% of failures, else 0 even with failures. The load: stats_bounded.py's."""

from locust import events
from stats_bounded import Bounded  # noqa: F401  (the users of this file)


@events.quitting.add_listener
def _(environment, **kw):
    if environment.stats.total.fail_ratio > 0.01:
        environment.process_exit_code = 3
    elif environment.stats.total.avg_response_time > 2000:
        environment.process_exit_code = 4
    elif environment.stats.total.get_response_time_percentile(0.95) > 5000:
        environment.process_exit_code = 5
    else:
        environment.process_exit_code = 0
