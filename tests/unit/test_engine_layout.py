"""The engine's folders depend on one another without a cycle (docs/architecture.md, "The engine"): each
top-level module of crates/squall-engine/src may use only those before it in this order. Read from the
source: every `crate::<module>` path counts, `use` lines and inline paths alike."""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "crates" / "squall-engine" / "src"
ORDER = ["types", "stats", "net", "http", "ws", "run", "bench", "mqtt", "script"]
PATH = re.compile(r"\bcrate::(" + "|".join(ORDER) + r")\b")


def _uses(module):
    files = [SRC / f"{module}.rs"] if (SRC / f"{module}.rs").exists() else sorted((SRC / module).rglob("*.rs"))
    return {m for f in files for m in PATH.findall(f.read_text())} - {module}


def test_every_engine_module_is_listed():
    found = {p.stem for p in SRC.glob("*.rs")} | {p.name for p in SRC.iterdir() if p.is_dir()}
    assert found - {"lib"} == set(ORDER)


def test_no_module_reaches_up_to_the_crate_root():
    """lib.rs only declares the folders and re-exports for the binding: an item a module uses by
    `crate::NAME` (a constant, a function) would sit above every folder (issue 41: `crate::VERSION`,
    which the folder order above did not see). Every `crate::` path names a folder."""
    reached = {
        f"{f.relative_to(SRC)}: crate::{name}"
        for f in sorted(SRC.rglob("*.rs"))
        if f.name != "lib.rs"
        for name in re.findall(r"\bcrate::(\w+)", f.read_text())
        if name not in ORDER
    }
    assert not reached, sorted(reached)


def test_engine_modules_use_only_the_ones_below_them():
    for i, module in enumerate(ORDER):
        above = set(ORDER[i:]) - {module}
        assert not _uses(module) & above, (module, sorted(_uses(module) & above))


def _cycle(graph):
    """A cycle of `graph` (node -> the nodes it uses) as a list of nodes, or None."""
    state = {}  # 1: on the current path, 2: done

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [node])):
            return found
    return None


def test_the_files_of_each_engine_folder_use_one_another_without_a_cycle():
    """Inside a folder too (issue 27: mqtt's run.rs held the types its publisher, verify and report
    used, and config.rs and message.rs used each other). A file uses a sibling by `super::NAME` or
    `crate::FOLDER::NAME`, outside its unit tests (a test may build its input with a sibling: h2lean's
    tests make requests with h2's builder); mod.rs, which declares them, is left out."""
    folders = [d for d in SRC.iterdir() if d.is_dir()]
    assert folders
    for folder in folders:
        files = {f.stem: f for f in folder.glob("*.rs") if f.stem != "mod"}
        names = "|".join(sorted(files))
        use = re.compile(rf"\b(?:super|crate::{folder.name})::({names})\b")
        code = {stem: f.read_text().split("#[cfg(test)]\nmod tests")[0] for stem, f in files.items()}
        graph = {stem: set(use.findall(text)) - {stem} for stem, text in code.items()}
        assert _cycle(graph) is None, (folder.name, _cycle(graph))


def test_a_cycle_is_found():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
