"""The subcommands of `squall`: `bench`, `mqtt`, `demo` and `run` (a locustfile), each with its
`add_parser`/`add_arguments` and `run(args) -> exit code`."""
