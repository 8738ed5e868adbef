"""A shape's stages, each naming its User classes: 2 users of [A], 3 of [B, C] (C's fixed_count is 1),
1 of [A, B], then the end. Locust's dispatcher adds a B in the second stage (it looks for missing
fixed_count users only at its start and after a user stopped), never a C, and stops the newest users in
the third; each stage's spawning completes (the event and "All users spawned"). A listener reads the
shape through `environment.shape_class`, the shape's instance."""

from locust import HttpUser, LoadTestShape, constant, events, task


class A(HttpUser):
    wait_time = constant(0.5)

    @task
    def t(self):
        self.client.get("/a")


class B(HttpUser):
    wait_time = constant(0.5)

    @task
    def t(self):
        self.client.get("/b")


class C(HttpUser):
    fixed_count = 1
    wait_time = constant(0.5)

    @task
    def t(self):
        self.client.get("/c")


class Stages(LoadTestShape):
    # (ends at, users, spawn rate, classes): the ticks come about a second apart from 0, each stage's
    # end half a second from them
    stages = [(1.5, 2, 10, [A]), (2.5, 3, 10, [B, C]), (3.5, 1, 10, [A, B])]

    def tick(self):
        t = self.get_run_time()
        return next(((users, rate, classes) for end, users, rate, classes in self.stages if t < end), None)


env = []


@events.test_start.add_listener
def started(environment, **_kw):
    env.append(environment)
    shape = environment.shape_class
    print("SHAPE", type(shape).__name__, isinstance(shape, LoadTestShape), flush=True)


@events.spawning_complete.add_listener
def spawned(user_count, **_kw):
    print("SPAWNED", user_count, env[0].shape_class.get_current_user_count(), flush=True)
