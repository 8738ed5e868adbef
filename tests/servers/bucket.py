"""The token bucket of the capacity servers: `take()` returns once a token is there, first come first
served; tokens refill at `rate` a second up to a burst of rate / 20 (50 ms' worth)."""

import asyncio
import time


class Bucket:
    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.burst = max(1.0, rate / 20)
        self.tokens = self.burst
        self.at = time.monotonic()
        self.lock = asyncio.Lock()  # first come, first served

    async def take(self) -> None:
        async with self.lock:
            while True:
                now = time.monotonic()
                self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
                self.at = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                await asyncio.sleep((1 - self.tokens) / self.rate)
