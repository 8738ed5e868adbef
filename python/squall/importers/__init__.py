"""Importers: a description of an API or of recorded traffic, made into a locustfile (`squall import`).

Each format has its reader (`openapi/`: OpenAPI 3.0, 3.1 and Swagger 2.0; `postman.py`: Postman
collections; `har.py`: browsers' HAR recordings), which turns its document into a `plan.Plan`: the
requests, their values, the credentials, what runs in order and what was left out and why. One
writer, `emit`, makes every plan the same plain Locust file (`pysource`: laid out as `ruff format`
would), so that a new format is only its reader. What readers share: `sources` (a file or URL, JSON
or YAML, bounded), `values` (a value valid against a JSON Schema) and `patterns` (a string that
matches a regular expression).

None of this loads on `squall -f` or any other command: `squall import` imports it when it runs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Options:
    """What the command line asks of an import, whatever the format."""

    seed: int = 0  # the values drawn: one seed, one file
    wait: tuple[float, float] = (1.0, 3.0)  # the user's think time, seconds; (0, 0): none
    weights: dict[str, int] = field(default_factory=dict)  # tag -> weight of its tasks
    required_only: bool = False  # leave optional parameters and properties out
    flows: bool = True  # chain a create and the requests on what it created
    output: str = "locustfile.py"  # the file's name, as its docstring says how to run it
