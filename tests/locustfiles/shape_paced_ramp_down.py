"""A LoadTestShape that ramps down: 8 `Paced` users (shape_ticks.py) for a second, then 2 at a spawn
rate of 2 a second (Locust stops users at the spawn rate, as it starts them), then the end at 4 s.
Each tick is noted in `ticks`."""

from locust import LoadTestShape
from shape_ticks import Paced, ticks

__all__ = ["Down", "Paced"]


class Down(LoadTestShape):
    def tick(self):
        t = self.get_run_time()
        tick = (8, 100) if t < 1 else (2, 2) if t < 4 else None
        ticks.append((t, tick))
        return tick
