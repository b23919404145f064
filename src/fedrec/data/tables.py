"""Reading a user's table (CSV, TSV, any delimited text, or Parquet) into named text columns.

:func:`read_table` returns every column as an array of the cells' text (or, from Parquet, of
the stored values) with the file line of every row, so that whoever converts a cell can name
the line of a bad one. Problems are one-line :class:`~fedrec.errors.DataError` s (an empty file,
a row with the wrong number of fields, a missing column) or :class:`~fedrec.errors.ConfigError`
s (an option that makes no sense).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedrec.data.loaders._common import fail, read_text
from fedrec.errors import ConfigError

#: Separator names a user may give (``--data-opt sep=tab``) and the text they stand for.
SEP_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|",
             "space": " "}
#: The separator a file's suffix implies when none is given.
SEP_BY_SUFFIX = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True)
class Table:
    """Columns of one file: ``columns[name]`` is an array over rows; ``lines[k]`` is row k's
    line in the file (Parquet: its 1-based row number); ``where`` says which ("line"/"row")."""

    path: Path
    columns: dict[str, np.ndarray]
    lines: np.ndarray
    where: str = "line"

    def __len__(self) -> int:
        return len(self.lines)

    def at(self, row: int) -> str:
        """``"PATH line N"``: where row ``row`` is, for a message."""
        return f"{self.path} {self.where} {int(self.lines[row])}"

    def column(self, spec: str | int, option: str) -> np.ndarray:
        """The column a user named by ``spec`` (a header name, or a 0-based index);
        a :class:`DataError` naming the columns there are when it is not in the file."""
        names = list(self.columns)
        if isinstance(spec, bool) or not isinstance(spec, str | int):
            raise ConfigError(f"{option} must be a column name or a 0-based index, got {spec!r}")
        if isinstance(spec, int):
            if not 0 <= spec < len(names):
                raise fail(f"{self.path}: {option}={spec} but the file has {len(names)} columns "
                           f"(0..{len(names) - 1})")
            return self.columns[names[spec]]
        if spec not in self.columns:
            raise fail(f"{self.path}: no column {spec!r} ({option}); its columns are "
                       f"{', '.join(map(repr, names))}")
        return self.columns[spec]


def separator(path: Path, sep: str | None) -> str:
    """The field separator: ``sep`` (a name of :data:`SEP_NAMES` or the text itself), else the
    one the suffix implies; a ConfigError asking for ``sep`` when neither says."""
    if sep is None:
        if path.suffix.lower() not in SEP_BY_SUFFIX:
            raise ConfigError(f"{path}: cannot tell the field separator from the suffix "
                              f"{path.suffix or '(none)'!r}; give sep=tab, comma, semicolon, "
                              "pipe, space or the text itself")
        return SEP_BY_SUFFIX[path.suffix.lower()]
    if not isinstance(sep, str) or not sep:
        raise ConfigError(f"sep must be a non-empty text, got {sep!r}")
    return SEP_NAMES.get(sep, sep)


def read_table(path: Path, sep: str | None = None, header: bool = True,
               encoding: str = "utf-8") -> Table:
    """Read ``path`` (module docstring). Without a ``header`` the columns are named ``"0"``,
    ``"1"``, ...; blank lines are skipped; a one-character separator follows CSV quoting rules,
    a longer one (``::``) splits plainly."""
    if not isinstance(header, bool):
        raise ConfigError(f"header must be true or false, got {header!r}")
    if not path.is_file():
        raise fail(f"{path}: no such file")
    if path.suffix.lower() in PARQUET_SUFFIXES:
        return _read_parquet(path)
    delim = separator(path, sep)
    text = read_text(path, encoding)
    if len(delim) == 1:
        rows = _csv_rows(path, text, delim)
    else:
        rows = [(n, line.split(delim)) for n, line in enumerate(text.splitlines(), start=1)
                if line.strip()]
    if not rows:
        raise fail(f"{path}: the file is empty")
    names = [f.strip() for f in rows[0][1]] if header else [str(k) for k in range(len(rows[0][1]))]
    body = rows[1:] if header else rows
    if not body:
        raise fail(f"{path}: no data rows (only a header)")
    if header and len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise fail(f"{path} line {rows[0][0]}: column {dup!r} is named twice in the header")
    for line, fields in body:
        if len(fields) != len(names):
            raise fail(f"{path} line {line}: {len(fields)} fields, but "
                       f"{'the header names' if header else 'the first row has'} {len(names)}")
    cells = np.array([fields for _, fields in body], dtype=object)
    columns = {name: cells[:, k] for k, name in enumerate(names)}
    return Table(path, columns, np.array([line for line, _ in body], dtype=np.int64))


def _csv_rows(path: Path, text: str, delim: str) -> list[tuple[int, list[str]]]:
    """``(line, fields)`` of every non-blank row; a quote never closed, or a field over
    ``csv.field_size_limit()`` characters, is a DataError naming the line it starts on."""
    rows: list[tuple[int, list[str]]] = []
    # strict: a quote left open runs to the end of the file (read as one field) otherwise.
    for strict in (True, False):
        reader = csv.reader(io.StringIO(text), delimiter=delim, strict=strict)
        rows, start = [], 1
        try:
            for fields in reader:
                if any(f.strip() for f in fields):
                    rows.append((reader.line_num, fields))
                start = reader.line_num + 1
            return rows
        except csv.Error as exc:
            if "field limit" in str(exc):
                raise fail(f"{path} line {start}: a field longer than "
                           f"{csv.field_size_limit():,} characters (a quote left open?)") from None
            if "end of data" in str(exc):
                raise fail(f"{path} line {start}: a quoted field is never closed (a quote "
                           "opened on this line or after runs to the end of the file)") from None
            if not strict:
                raise fail(f"{path} line {reader.line_num}: {exc}") from None
            # Other strict-only complaints (text after a closing quote): read as before.
    return rows


def _read_parquet(path: Path) -> Table:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(f"{path}: reading Parquet needs pyarrow: pip install "
                          "'fedrec[parquet]'") from None
    try:
        data = pq.read_table(path).to_pydict()
    except Exception as exc:  # pyarrow raises its own error types for unreadable files
        raise fail(f"{path}: not a readable Parquet file ({exc})") from exc
    n = len(next(iter(data.values()))) if data else 0
    if n == 0:
        raise fail(f"{path}: the file is empty")
    columns = {str(k): np.array(v, dtype=object) for k, v in data.items()}
    return Table(path, columns, np.arange(1, n + 1, dtype=np.int64), where="row")


def parse_numbers(table: Table, values: np.ndarray, what: str,
                  rows: Sequence[int] | None = None) -> np.ndarray:
    """``values`` (cells of ``table``) as float64; the first cell that is not a finite number
    -> DataError naming its line. ``rows[k]`` is the table row of ``values[k]`` (default k)."""
    try:  # the fast path; the loop below finds the bad cell
        out = np.asarray(values, dtype=np.float64)
        if np.isfinite(out).all():
            return out
    except (TypeError, ValueError):
        pass
    out = np.empty(len(values), dtype=np.float64)
    for k, cell in enumerate(values):
        try:
            out[k] = float(cell.strip() if isinstance(cell, str) else cell)
        except (TypeError, ValueError):
            out[k] = np.nan
        if not np.isfinite(out[k]):
            row = k if rows is None else rows[k]
            raise fail(f"{table.at(row)}: {what} {cell!r} is not a number")
    return out
