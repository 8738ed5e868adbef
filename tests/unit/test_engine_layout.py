"""The engine's folders depend on one another without a cycle (README, "How it is built"): each
top-level module of crates/squall-engine/src may use only those before it in this order. Read from the
source: every `crate::<module>` path counts, `use` lines and inline paths alike."""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "crates" / "squall-engine" / "src"
ORDER = ["types", "stats", "net", "http", "run", "bench", "mqtt", "script"]
PATH = re.compile(r"\bcrate::(" + "|".join(ORDER) + r")\b")


def _uses(module):
    files = [SRC / f"{module}.rs"] if (SRC / f"{module}.rs").exists() else sorted((SRC / module).rglob("*.rs"))
    return {m for f in files for m in PATH.findall(f.read_text())} - {module}


def test_every_engine_module_is_listed():
    found = {p.stem for p in SRC.glob("*.rs")} | {p.name for p in SRC.iterdir() if p.is_dir()}
    assert found - {"lib"} == set(ORDER)


def test_engine_modules_use_only_the_ones_below_them():
    for i, module in enumerate(ORDER):
        above = set(ORDER[i:]) - {module}
        assert not _uses(module) & above, (module, sorted(_uses(module) & above))
