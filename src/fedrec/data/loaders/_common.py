"""Parsing and validation helpers shared by the loaders.

Every problem is reported as a :class:`~fedrec.errors.DataError` with a one-line message that
names the file (and the line, where there is one).
"""

from __future__ import annotations

import codecs
import io
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fedrec.errors import ConfigError, DataError


def one_line(message: str) -> str:
    """Collapse ``message`` to a single line (exception texts from libraries may span several)."""
    return " ".join(str(message).split())


def fail(message: str) -> DataError:
    """A :class:`DataError` with ``message`` collapsed to one line."""
    return DataError(one_line(message))


def require_files(name: str, root: Path, files: Sequence[str]) -> None:
    """Raise a :class:`DataError` naming the ``files`` missing from ``root`` and their source."""
    missing = [f for f in files if not (root / f).is_file()]
    if missing:
        from fedrec.data.download import missing_files_message

        raise DataError(missing_files_message(name, root, missing))


def read_text(path: Path, encoding: str = "utf-8") -> str:
    """The whole file as text; undecodable bytes or I/O errors become a :class:`DataError`,
    an ``encoding`` Python does not know a :class:`ConfigError`."""
    try:
        if not isinstance(encoding, str):
            raise LookupError(encoding)
        codecs.lookup(encoding)
    except LookupError:
        raise ConfigError(f"encoding={encoding!r} is not a text encoding Python knows (e.g. "
                          "utf-8, utf-16, latin-1, cp1252)") from None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise fail(f"{path}: cannot read ({exc.strerror or exc})") from exc
    try:
        return data.decode(encoding)
    except LookupError:  # known to codecs, but not text (rot13, base64)
        raise ConfigError(f"encoding={encoding!r} is not a text encoding") from None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise fail(f"{path} line {line}: not valid {encoding} text") from exc


def content_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` for every non-blank line (numbers are 1-based)."""
    return [(i, ln) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip()]


def _describe_sep(sep: str) -> str:
    return {"\t": "tab", ",": "comma", "|": "pipe", "::": "'::'", " ": "space"}.get(sep, repr(sep))


def split_fields(path: Path, lineno: int, line: str, sep: str, ncols: int) -> list[str]:
    """Split one line into exactly ``ncols`` fields or raise a :class:`DataError`."""
    fields = line.rstrip("\r\n").split(sep)
    if len(fields) != ncols:
        raise fail(
            f"{path} line {lineno}: expected {ncols} {_describe_sep(sep)}-separated fields, "
            f"got {len(fields)}"
        )
    return fields


def parse_number(path: Path, lineno: int, text: str, what: str, integer: bool = False) -> float:
    """One numeric field; non-numeric, non-finite or (for ``integer``) fractional -> DataError."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value) or (integer and value != int(value)):
        kind = "an integer" if integer else "a number"
        raise fail(f"{path} line {lineno}: {what} {text.strip()!r} is not {kind}")
    return value


def load_numeric_table(
    path: Path,
    ncols: int,
    sep: str,
    names: Sequence[str],
    integer_cols: Sequence[int] = (),
    skip_header: bool = False,
) -> np.ndarray:
    """A ``(rows, ncols)`` float64 array from a delimited all-numeric text file.

    Uses :func:`numpy.loadtxt` (fast); if that fails, re-reads the file line by line to report the
    first bad line precisely (wrong field count, non-numeric or fractional id). Blank lines are
    skipped. ``names`` name the columns in messages.
    """
    text = read_text(path, encoding="latin-1")
    if skip_header:
        text = text.split("\n", 1)[1] if "\n" in text else ""
    body = text.replace(sep, "\t") if len(sep) > 1 else text
    delim = "\t" if len(sep) > 1 else sep
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.loadtxt(
                io.StringIO(body), delimiter=delim, dtype=np.float64, comments=None, ndmin=2
            )
    except ValueError:
        arr = None
    if arr is None or (arr.shape[1] != ncols and arr.size):
        _diagnose(path, text, ncols, sep, names, integer_cols, skip_header)
        raise fail(f"{path}: could not be parsed as {ncols} {_describe_sep(sep)}-separated numbers")
    if arr.size == 0:
        raise fail(f"{path}: file contains no data rows")
    bad = ~np.isfinite(arr).all(axis=1)
    for c in integer_cols:
        bad |= arr[:, c] != np.round(arr[:, c])
    if bad.any():
        _diagnose(path, text, ncols, sep, names, integer_cols, skip_header)
        raise fail(f"{path} row {int(np.argmax(bad)) + 1}: non-finite or fractional id")
    return arr


def _diagnose(
    path: Path,
    text: str,
    ncols: int,
    sep: str,
    names: Sequence[str],
    integer_cols: Sequence[int],
    skip_header: bool,
) -> None:
    offset = 1 if skip_header else 0
    for lineno, line in content_lines(text):
        lineno += offset
        fields = split_fields(path, lineno, line, sep, ncols)
        for c, f in enumerate(fields):
            parse_number(path, lineno, f, names[c], integer=c in integer_cols)


def row_line_number(
    path: Path, row: int, skip_header: bool = False, encoding: str = "latin-1"
) -> int:
    """1-based line number of the ``row``-th (0-based) non-blank data line of ``path``."""
    lines = content_lines(read_text(path, encoding))
    if skip_header:
        lines = lines[1:]
    return lines[row][0] if 0 <= row < len(lines) else row + 1


def check_values(
    path: Path,
    values: np.ndarray,
    lo: float,
    hi: float,
    step: float | None = None,
    what: str = "rating",
    skip_header: bool = False,
) -> None:
    """Every value in ``[lo, hi]`` (and a multiple of ``step``), else DataError naming the line."""
    bad = (values < lo) | (values > hi) | ~np.isfinite(values)
    if step is not None:
        bad |= np.abs(values / step - np.round(values / step)) > 1e-9
    if bad.any():
        row = int(np.argmax(bad))
        line = row_line_number(path, row, skip_header)
        grid = f" in steps of {step:g}" if step is not None else ""
        raise fail(f"{path} line {line}: {what} {values[row]:g} outside {lo:g}..{hi:g}{grid}")


class IdMap:
    """Maps raw ids (numbers or strings) to dense zero-based ``int64`` ids in sorted raw order."""

    def __init__(self, raw_ids: np.ndarray) -> None:
        self.raw = np.unique(np.asarray(raw_ids))

    def __len__(self) -> int:
        return len(self.raw)

    def encode(
        self, raw: np.ndarray, path: Path, what: str, skip_header: bool = False
    ) -> np.ndarray:
        """Dense ids of ``raw``; an id not in the map -> DataError naming the line of ``path``."""
        raw = np.asarray(raw)
        idx = np.searchsorted(self.raw, raw)
        idx_clipped = np.minimum(idx, len(self.raw) - 1)
        bad = self.raw[idx_clipped] != raw if len(self.raw) else np.ones(len(raw), bool)
        if bad.any():
            row = int(np.argmax(bad))
            line = row_line_number(path, row, skip_header)
            value = raw[row]
            numeric = isinstance(value, int | float | np.integer | np.floating)
            shown = f"{int(value)}" if numeric else repr(str(value))
            raise fail(f"{path} line {line}: unknown {what} id {shown}")
        return idx_clipped.astype(np.int64)


def one_hot(codes: np.ndarray, num: int) -> np.ndarray:
    """``(len(codes), num)`` float32 one-hot matrix."""
    out = np.zeros((len(codes), num), dtype=np.float32)
    out[np.arange(len(codes)), codes] = 1.0
    return out


def read_records(
    path: Path, sep: str, ncols: int, encoding: str = "utf-8", skip_header: bool = False
) -> list[tuple[int, list[str]]]:
    """``(line number, fields)`` for every non-blank line, each with exactly ``ncols`` fields."""
    lines = content_lines(read_text(path, encoding))
    if skip_header:
        lines = lines[1:]
    return [(n, split_fields(path, n, line, sep, ncols)) for n, line in lines]


def notice(message: str) -> None:
    """Tell the user which source or default was chosen (log record plus one line on stderr)."""
    import logging
    import sys

    logging.getLogger("fedrec.data").info(message)
    print(f"fedrec.data: {message}", file=sys.stderr)


def check_unique_ids(
    path: Path, ids: np.ndarray, records: Sequence[tuple[int, object]], what: str
) -> None:
    """DataError naming both lines if an id occurs twice (``records[k][0]`` is row k's line)."""
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        dup = uniq[np.argmax(counts > 1)]
        lines = [records[k][0] for k in np.flatnonzero(ids == dup)]
        raise fail(f"{path} line {lines[1]}: duplicate {what} {dup} (first on line {lines[0]})")
