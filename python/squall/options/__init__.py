"""The command line's options: the parser and the converters every command shares (`arguments`), and
Locust's options for `squall -f` (`run_arguments`), which `locust.argument_parser` (squall.argument_parser)
also offers to locustfiles. Below `squall.commands` and the Locust facade, which both read them."""
