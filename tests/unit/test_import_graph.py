"""squall's modules import one another without a cycle: each module can be read (and loaded) after the
ones it imports. Checked on the source with `ast`, module-level and function-level imports alike;
imports under `if TYPE_CHECKING:` are left out, since they never run (annotations only)."""

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "python" / "squall"


def _module_name(path):
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules():
    """{dotted name: path} of every module of the package, and the engine (a compiled leaf)."""
    found = {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}
    found["squall._engine"] = PACKAGE_DIR / "_engine.pyi"
    return found


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Imports(ast.NodeVisitor):
    """The squall modules a module imports: (target, line, at module level or in a function)."""

    def __init__(self, name, is_package, known):
        self.name, self.is_package, self.known = name, is_package, known
        self.found = []
        self.depth = 0

    def visit_If(self, node):
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _nested(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _nested

    def _add(self, target, node):
        if target in self.known:
            self.found.append((target, node.lineno, self.depth == 0))

    def visit_Import(self, node):
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node):
        base = node.module or ""
        if node.level:
            package = self.name if self.is_package else self.name.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            self._add(sub if sub in self.known else base, node)


def import_graph():
    """{module: [(imported module, line, module-level?)]}. Importing `a.b.c` also runs the `__init__` of
    `a` and `a.b`; those implicit edges are left out, as Python has the parent package in sys.modules
    (partly initialized) before any submodule loads."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        if path.suffix == ".pyi":
            graph[name] = []
            continue
        visitor = _Imports(name, path.name == "__init__.py", modules)
        visitor.visit(ast.parse(path.read_text(), str(path)))
        graph[name] = [edge for edge in visitor.found if edge[0] != name]
    return graph


def find_cycle(graph):
    """One cycle as a list of modules (first == last), or None."""
    state = {}  # module -> "open" while on the DFS stack, "done" after
    stack = []

    def visit(module):
        state[module] = "open"
        stack.append(module)
        for target, _line, _top in graph.get(module, []):
            if state.get(target) == "open":
                return [*stack[stack.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "squall.cli" in graph and "squall.user.users" in graph  # the walk found the package
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_function_level_imports_say_they_are_for_start_up_speed():
    """A function-level import of a squall module is allowed only to keep start-up fast, and says so in a
    comment on its line or the line above; never to hide a cycle."""
    unexplained = []
    for name, edges in import_graph().items():
        path = _modules()[name]
        lines = path.read_text().splitlines() if path.suffix == ".py" else []
        for target, line, top in edges:
            if not top and not any("start-up" in text for text in lines[max(0, line - 2) : line]):
                unexplained.append(f"{path.name}:{line} imports {target}")
    assert not unexplained, unexplained


def test_the_cycle_finder_finds_cycles():
    graph = {"a": [("b", 1, True)], "b": [("c", 1, False)], "c": [("a", 1, True)], "d": [("a", 1, True)]}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": [("b", 1, True)], "b": []}) is None


def test_the_packages_import_one_another_without_a_cycle():
    """One level up too (issue 27): a package's modules may not import a package whose modules import it
    back, even when the modules themselves make no cycle (`distributed` took the progress line from
    `commands`, which starts distributed runs; `web` took the CSV writer from `report`, whose
    `__init__` wrote HTML reports with `web`). A package is `squall.X`; the top-level modules count as
    their own."""
    package = lambda module: ".".join(module.split(".")[:2])
    graph = {}
    for module, edges in import_graph().items():
        graph.setdefault(package(module), [])
        for target, line, top in edges:
            if package(target) != package(module):
                graph[package(module)].append((package(target), line, top))
    cycle = find_cycle(graph)
    assert cycle is None, "package cycle: " + " -> ".join(cycle)


# What squall.runtime, the run machinery, may import of squall when it runs: the engine, itself and
# leaves. Never the Locust facade it runs (users, clients, env), the commands or the distributed
# run that drive it, the dashboard or the reports beyond their number formats.
RUNTIME_MAY_IMPORT = {"squall._engine", "squall.errors", "squall.exception", "squall.report.units"}


def test_the_run_machinery_sits_below_what_drives_it():
    """squall.runtime (hub, spawner, open model, gevent's hub, signals, limits, lateness) is one package
    below both `commands` and `distributed` and the Locust facade (issue 27): its modules import only
    one another and leaves, and whatever drives a run imports it, not the other way round."""
    graph = import_graph()
    runtime = [m for m in graph if m.startswith("squall.runtime")]
    assert {"squall.runtime.hub", "squall.runtime.spawner", "squall.runtime.gevent_hub"} <= set(runtime)
    above = [
        f"{module} imports {target}"
        for module in runtime
        for target, _line, _top in graph[module]
        if not target.startswith("squall.runtime") and target not in RUNTIME_MAY_IMPORT
    ]
    assert not above, above
    users = {m for m, edges in graph.items() for t, _l, _top in edges if t.startswith("squall.runtime")}
    assert {"squall.commands.run", "squall.distributed.driver", "squall.clients", "squall.runners"} <= users
