"""`LoadTestShape`: a class whose `tick()` sets the user count (and spawn rate) as the test goes."""

import time


class LoadTestShape:
    """Subclass it in a locustfile; `tick()` returns `(users, spawn_rate)`, `(users, spawn_rate,
    user_classes)`, or None to end the test. Called about once a second."""

    abstract = True
    runner = None

    def __init__(self):
        self.start_time = time.monotonic()

    def reset_time(self):
        self.start_time = time.monotonic()

    def get_run_time(self):
        return time.monotonic() - self.start_time

    def get_current_user_count(self):
        return self.runner.user_count if self.runner else 0

    def tick(self):
        raise NotImplementedError("a LoadTestShape needs a tick() method")
