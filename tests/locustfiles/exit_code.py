from locust import HttpUser, constant, events, task


@events.quitting.add_listener
def force(environment, **kw):
    environment.process_exit_code = 7


class Quitter(HttpUser):
    wait_time = constant(0.01)

    @task
    def go(self):
        self.client.get("/ok")
        self.environment.runner.quit()
