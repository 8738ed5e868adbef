"""bench/common.py `write_section`: a benchmark rewrites its own section of RESULTS.md, keeps the other
sections as they were, and keeps its section's hand-written notes (from the NOTES line on)."""

import contextlib
import importlib.util
import io
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def common(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_common", ROOT / "bench" / "common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "BENCH", tmp_path)
    return module


def write(common, *lines):
    with contextlib.redirect_stdout(io.StringIO()):
        common.write_section(list(lines))
    return (common.BENCH / "RESULTS.md").read_text()


def test_a_rewrite_keeps_its_notes_and_the_other_sections(common):
    (common.BENCH / "RESULTS.md").write_text(
        "# Benchmark results\n\n"
        "## A\n\nold A numbers\n\n### A's memory\n\nold memory\n\n"
        f"{common.NOTES}\n\nwhy A is what it is\n\n"
        "## B\n\nB numbers\n"
    )
    text = write(common, "## A", "", "new A numbers", "", "### A's memory", "", "new memory", "")
    assert text == (
        "# Benchmark results\n\n"
        "## A\n\nnew A numbers\n\n### A's memory\n\nnew memory\n\n"
        f"{common.NOTES}\n\nwhy A is what it is\n\n"
        "## B\n\nB numbers\n"
    )
    assert write(common, "## A", "", "newer", "").count("why A is what it is") == 1


def test_a_section_without_notes_is_replaced_whole_and_a_new_one_goes_last(common):
    (common.BENCH / "RESULTS.md").write_text("# Benchmark results\n\n## A\n\nold\n\n## B\n\nB\n")
    text = write(common, "## A", "", "new", "")
    assert text == "# Benchmark results\n\n## A\n\nnew\n\n## B\n\nB\n"
    text = write(common, "## C", "", "c", "")
    assert text.endswith("## B\n\nB\n\n## C\n\nc\n")
