"""A LoadTestShape of `Paced` users (shape_ticks.py: 10 requests a second each): a ramp from 0 to 8
users at 2 a second (4 s), a step up to 12 (2 s), a step down to 4 (2 s), then the end (tick() returns
None at 8 s). Each tick is noted in `ticks`."""

from locust import LoadTestShape
from shape_ticks import Paced, ticks

__all__ = ["Paced", "Steps"]


class Steps(LoadTestShape):
    def tick(self):
        t = self.get_run_time()
        if t < 4:
            tick = (8, 2)
        elif t < 6:
            tick = (12, 100)
        elif t < 8:
            tick = (4, 100)
        else:
            tick = None
        ticks.append((t, tick))
        return tick
