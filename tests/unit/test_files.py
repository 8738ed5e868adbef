"""squall.files: an output is the whole new file or the old one, never a prefix."""

import os
import stat

import pytest

from squall import files


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("the old result\n")
    with pytest.raises(RuntimeError), files.replace(str(path)) as f:
        f.write("half of the new")
        raise RuntimeError("the disk filled up")
    assert path.read_text() == "the old result\n"
    assert os.listdir(tmp_path) == ["r.json"]


def test_the_new_file_replaces_the_old_with_the_usual_permissions(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("old")
    files.write_text(str(path), "new\n")
    assert path.read_text() == "new\n"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask  # not mkstemp's 0600
    assert os.listdir(tmp_path) == ["r.csv"]


def test_a_path_that_is_no_regular_file_is_written_in_place():
    """/dev/full: written where it is (it cannot be replaced), and its error reaches the caller."""
    with pytest.raises(OSError) as e, files.replace("/dev/full") as f:
        f.write("x" * 100_000)
    assert e.value.errno == 28  # ENOSPC


@pytest.mark.parametrize("length", [200, 201, 255])
def test_every_name_the_file_system_takes_is_written(tmp_path, length):
    """The temporary file is named after the target and 14 bytes more: past 200 bytes it takes a short
    name instead, so that a target of 255 bytes (ext4's and tmpfs's limit) is written too."""
    path = tmp_path / ("é" * (length // 2) + "x" * (length % 2))  # two bytes each in UTF-8
    assert len(os.fsencode(path.name)) == length
    files.write_text(str(path), "whole\n")
    assert path.read_text() == "whole\n" and os.listdir(tmp_path) == [path.name]
