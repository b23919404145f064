"""fedrec.core.files: a refused write is one WriteError naming what and where, never half a
file; writes refused by the environment are told apart from a bug's errors."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from fedrec.core import files
from fedrec.errors import WriteError


def _enospc(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_keeps_the_previous_file_whole_and_leaves_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "report.md"
    files.write_atomic(path, "old", "the report")
    monkeypatch.setattr(Path, "write_bytes", _enospc)
    with pytest.raises(WriteError) as err:
        files.write_atomic(path, b"new", "the report")
    assert str(err.value) == f"could not write the report to {path} (No space left on device)"
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == [
        "report.md"]


def test_writing_turns_refused_writes_into_one_line_and_lets_others_through(
        tmp_path: Path) -> None:
    with pytest.raises(WriteError, match=r"^could not write the logs to .* \(No space left"):
        with files.writing("the logs", tmp_path):
            _enospc()
    with pytest.raises(FileNotFoundError):  # a missing program is not a full disk
        with files.writing("the logs", tmp_path):
            raise FileNotFoundError(errno.ENOENT, "no such program")
