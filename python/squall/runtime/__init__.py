"""The run machinery of `squall -f`, below the Locust-compatible API (squall.user, squall.clients, ...)
and the commands that drive it (squall.commands, squall.distributed):

- hub: the cooperative scheduler, one greenlet per user on the engine's own thread;
- gevent_hub: real gevent's hub bound to that scheduler, so blocking libraries wait cooperatively;
- spawner: users started and stopped toward a target count at a spawn rate;
- open_model: task iterations started by arrivals (`--rate`) instead of by users' loops;
- signals: Ctrl-C and SIGTERM during a run;
- limits: the open-file limit and the descriptor table, sized before a run;
- lateness: whether a paced run's late sends mean the generator may be the limit;
- follow: what every run loop does each pass (the page's commands, the run so far once a second, a
  failed threshold's stop), whatever the loop waits on.

It imports nothing above it: not the commands, the dashboard or the Locust facade (test_import_graph)."""
