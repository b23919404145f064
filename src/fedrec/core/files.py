"""Writing files so that a failed write (a full disk, a quota, a folder gone read-only) is one
line, :class:`~fedrec.errors.WriteError`, never a traceback, and never half a file under its
name: :func:`write_atomic` for a whole file, :func:`writing` around other writes (logs that
processes are given, files appended to).
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from pathlib import Path

from fedrec.errors import WriteError

#: The errors of a write that the environment refuses (no room, a quota, a file too large, a
#: read-only file system, no permission), as opposed to a bug or a missing program.
REFUSED_WRITES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES,
                            errno.EPERM})


def unwritten(what: str, path: Path, exc: OSError) -> WriteError:
    """The one-line error of ``what`` that could not be written to ``path``."""
    return WriteError(f"could not write {what} to {path} ({exc.strerror or exc})")


def write_atomic(path: Path, data: str | bytes, what: str) -> None:
    """``data`` into ``path`` through ``path.tmp`` (never half a file under the name); any
    failed write is a :class:`WriteError` naming ``what`` and ``path`` (the temporary is
    removed, an earlier ``path`` stays whole)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise unwritten(what, path, exc) from None


@contextlib.contextmanager
def writing(what: str, path: Path) -> Iterator[None]:
    """Run the block; an :class:`OSError` of :data:`REFUSED_WRITES` in it is a
    :class:`WriteError` naming ``what`` and ``path`` (others, a bug's, pass unchanged)."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in REFUSED_WRITES:
            raise
        raise unwritten(what, path, exc) from None
