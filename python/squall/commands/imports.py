"""`squall import openapi|postman|har SOURCE -o locustfile.py`: an API's description, a Postman collection
or a browser's recording made into a locustfile that runs unchanged under squall and Locust
(squall.importers; docs/importing.md).

The command's policy, and why:

- One subcommand per format (`openapi`, `postman`, `har`), each with the same options where they
  apply: `-o FILE`, `--dry-run` (the file on stdout, nothing written), `--wait`; `--seed` and
  `--weight TAG=N` for OpenAPI's made values and tags.
- The summary goes to stderr, one line for the whole and one for each operation left out (and each
  security scheme not sent), so that `--dry-run > file.py` keeps only the file and a CI log says
  what is missing.
- A document that cannot be read or used (not of its format (another format is named as what it is),
  truncated, an unknown version, a broken `$ref`, a URL that cannot be fetched, no operation or request
  that can be sent: a file without a task would only fail when run) and an output that cannot be
  written are usage errors: one line on stderr, exit 2 (squall.exitcodes.USAGE), no traceback. The
  output is checked before the document is read, and written whole or not at all (squall.files.replace).
- Only this module loads for `squall --help` and the other commands; the importers load when
  `squall import` runs (start-up: with PyYAML they are 32 ms of CPU on the development host, their
  bytecode cached, that no other command needs).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from squall import exitcodes, files
from squall.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from squall.importers import Options
    from squall.importers.plan import Plan
    from squall.options.arguments import Subcommands


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    p = commands.add_parser(
        "import",
        help="make a locustfile from an API description (OpenAPI 3.0/3.1, Swagger 2.0), a Postman collection "
        "or a HAR recording",
        description="Make a locustfile from an API description (one task per operation, every request valid "
        "against the document's schemas), a Postman collection or a browser's HAR recording.",
    )
    formats = p.add_subparsers(dest="format", metavar="FORMAT", parser_class=type(p))
    o = formats.add_parser(
        "openapi",
        help="an OpenAPI 3.0/3.1 or Swagger 2.0 document (JSON or YAML, a file or an http(s) URL)",
        description="Make a locustfile from an OpenAPI 3.0/3.1 or Swagger 2.0 document: one task per operation, "
        "named by its route template and tagged with its tags; values from the document's examples and "
        "schemas; a create and the requests on what it created chained where the document makes it clear; "
        "credentials from environment variables.",
    )
    o.add_argument("spec", metavar="SPEC", help="the document: a file or an http(s) URL, JSON or YAML")
    _common(o)
    o.add_argument(
        "--required-only",
        action="store_true",
        help="send only required parameters and properties (default: optional ones too)",
    )
    o.add_argument(
        "--no-flows",
        dest="flows",
        action="store_false",
        help="one task per operation even where a create's id could feed the requests after it",
    )
    o.set_defaults(func=run_openapi)
    m = formats.add_parser(
        "postman",
        help="a Postman collection (v2.1 or v2.0, JSON)",
        description="Make a locustfile from a Postman collection v2.1 (or v2.0): a task per request at its top, "
        "a SequentialTaskSet per folder (its requests in order); {{variables}} from the environment file and the "
        "collection, the others from environment variables; auth at every level. Scripts are not run.",
    )
    m.add_argument("collection", metavar="COLLECTION", help="the collection: a file or an http(s) URL")
    m.add_argument("--environment", metavar="ENV", help="a Postman environment file whose values fill {{variables}}")
    _recorded(m, "1,3")
    m.set_defaults(func=run_postman)
    h = formats.add_parser(
        "har",
        help="a browser's recording (HAR 1.2: Chrome, Edge, Firefox)",
        description="Make a locustfile from a HAR recording: the journey in order, with its think times; static "
        "files and other hosts left out (unless asked); values a response returned and a later request sent "
        "(tokens, CSRF values, ids) taken from the response at run time.",
    )
    h.add_argument("har", metavar="FILE", help="the HAR file (a file or an http(s) URL)")
    h.add_argument("--keep-static", action="store_true", help="keep images, CSS, scripts and fonts")
    h.add_argument("--keep-hosts", action="store_true", help="keep requests to hosts other than the main one")
    _recorded(h, "0")
    h.set_defaults(func=run_har)
    p.set_defaults(func=_no_format, import_parser=p)
    return p


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="write the locustfile here")
    p.add_argument("--dry-run", action="store_true", help="print the locustfile on stdout and write nothing")
    p.add_argument("--seed", default="0", help="seed of the values made from schemas (default 0: one seed, one file)")
    p.add_argument(
        "--wait",
        default="1,3",
        metavar="MIN[,MAX]",
        help="the users' think time in seconds: between(MIN, MAX); 0 for none (default 1,3)",
    )
    p.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="TAG=N",
        help="weight N for the tasks tagged TAG (default 1 each); repeatable",
    )


def _recorded(p: argparse.ArgumentParser, wait: str) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="write the locustfile here")
    p.add_argument("--dry-run", action="store_true", help="print the locustfile on stdout and write nothing")
    p.add_argument(
        "--wait",
        default=wait,
        metavar="MIN[,MAX]",
        help=f"the users' think time in seconds between runs of their tasks: between(MIN, MAX); 0 for none "
        f"(default {wait})",
    )


def _no_format(args: argparse.Namespace) -> int:
    raise UsageError("say which format: squall import openapi|postman|har SOURCE -o FILE (see 'squall import --help')")


def _weights(given: list[str]) -> dict[str, int]:
    """--weight TAG=N, each tag once (a second weight for a tag was taken over the first silently)."""
    weights: dict[str, int] = {}
    for text in given:
        tag, n = _weight(text)
        if tag in weights and weights[tag] != n:
            raise UsageError(f"--weight gives {tag} twice ({weights[tag]} and {n}): give it once")
        weights[tag] = n
    return weights


def options(args: argparse.Namespace) -> Options:
    """The command line's options, checked."""
    from squall.importers import Options  # (start-up: see the module's policy)

    if not args.dry_run and not args.output:
        raise UsageError("say where to write it: -o FILE (or --dry-run to print it)")
    try:
        seed = int(getattr(args, "seed", "0"))
    except ValueError:
        raise UsageError(f"--seed '{args.seed}' is not a whole number") from None
    return Options(
        seed=seed,
        wait=_wait(args.wait),
        weights=_weights(getattr(args, "weight", [])),
        required_only=getattr(args, "required_only", False),
        flows=getattr(args, "flows", True),
        output=os.path.basename(args.output) if args.output else "locustfile.py",
    )


def _wait(text: str) -> tuple[float, float]:
    low_text, _, high_text = text.partition(",")
    try:
        low = float(low_text)
        high = float(high_text) if high_text else low
    except ValueError:
        raise UsageError(f"--wait '{text}' is not MIN[,MAX] in seconds (1,3 or 0)") from None
    if not (0 <= low <= high < 86400):
        raise UsageError(f"--wait '{text}': need 0 <= MIN <= MAX, in seconds")
    return low, high


def _weight(text: str) -> tuple[str, int]:
    tag, sep, number = text.rpartition("=")
    if not sep or not tag:
        raise UsageError(f"--weight '{text}' is not TAG=N")
    try:
        weight = int(number)
    except ValueError:
        raise UsageError(f"--weight '{text}': '{number}' is not a whole number") from None
    if not 1 <= weight <= 10_000:
        raise UsageError(f"--weight '{text}': the weight must be 1 to 10000")
    return tag, weight


def _line(text: str) -> str:
    """`text` on one line (a reason may quote a document's text, line breaks and all)."""
    return " ".join(text.split())


def _writable(path: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"cannot write {path}: it is a directory")
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write {path}: no writable directory {parent}")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UsageError(f"cannot write {path}: permission denied")


def run_openapi(args: argparse.Namespace) -> int:
    from squall.importers import openapi  # (start-up: see the module's policy)

    return _run(args, "openapi", args.spec, lambda chosen: openapi.plan(args.spec, chosen))


def run_postman(args: argparse.Namespace) -> int:
    from squall.importers import postman  # (start-up: see the module's policy)

    return _run(
        args, "postman", args.collection, lambda chosen: postman.plan(args.collection, chosen, args.environment)
    )


def run_har(args: argparse.Namespace) -> int:
    from squall.importers import har  # (start-up: see the module's policy)

    return _run(args, "har", args.har, lambda chosen: har.plan(args.har, chosen, args.keep_static, args.keep_hosts))


def _run(args: argparse.Namespace, kind: str, source: str, make: Callable[[Options], Plan]) -> int:
    from squall.importers import emit, sources  # (start-up: see the module's policy)

    chosen = options(args)
    if args.output and not args.dry_run:
        _writable(args.output)
        read = [(source, "the document itself"), (getattr(args, "environment", None), "the environment file")]
        for path, what in read:
            if path and os.path.exists(path) and os.path.realpath(path) == os.path.realpath(args.output):
                raise UsageError(f"-o {args.output} is {what}: write the locustfile elsewhere")
    try:
        plan = make(chosen)
    except sources.SourceError as e:
        raise UsageError(_line(str(e))) from None
    except RecursionError:
        raise UsageError(f"{source} nests too deeply to read") from None
    noun = plan.noun
    if not plan.tasks and not plan.flows:
        # A locustfile without a task would only fail when run: said now, with the first reason.
        if not plan.left_out:
            empty = {"openapi": "its paths are empty", "postman": "it has no request", "har": "it has no entry"}[kind]
            raise UsageError(f"{source} describes no {noun} to import ({empty})")
        operation, why = plan.left_out[0]
        first = _line(f"{operation}: {why}")
        raise UsageError(f"no {noun} of {source} can be sent ({len(plan.left_out)} left out; {first})")
    text = emit.locustfile(plan)
    lines = [f"squall import {kind}: {plan.tally()}"]
    lines += [_line(f"left out {operation}: {why}") for operation, why in plan.left_out]
    lines += [_line(f"note: {line}") for line in plan.notes]
    if args.dry_run:
        sys.stdout.write(text)
        if args.output:  # (the file's name still shapes the text: its docstring's commands)
            lines.append(f"note: --dry-run writes no file: {args.output} is left as it was")
    else:
        try:
            files.write_text(args.output, text)
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
        lines.append(f"wrote {args.output}")
    sys.stderr.write("\n".join(lines) + "\n")
    return exitcodes.OK
