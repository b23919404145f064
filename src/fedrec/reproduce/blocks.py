"""Generated blocks of a hand-written docs page: the tables of ``docs/results.md`` and
``docs/benchmarks.md``, written from committed files by ``fedrec pages``.

A block is everything between ``<!-- fedrec-generated: SOURCE -->`` and
``<!-- /fedrec-generated -->``; :func:`fill_blocks` replaces it with what ``SOURCE`` renders,
so the prose around it stays a person's and every figure inside it is read from a file.
``SOURCE`` is one of:

* ``fedrec results PATTERN... --markdown [--metrics M1,M2]``: the markdown table that
  ``fedrec results`` prints for the ``results.json`` files the glob patterns (relative to the
  checkout) match (:func:`fedrec.reproduce.compare.render`), each run's folder as a path
  relative to the checkout, so that the ``--out`` of its command is the committed one;
* ``bench FILE.json``: a benchmark's figures (:func:`bench_tables`), under the command the
  JSON records as ``command``;
* ``table NAME ARG...``: a hand-written results page's table (``results/*.md``,
  ``results/*/README.md``), rendered by :data:`fedrec.reproduce.tables.TABLES` ``[NAME]`` from
  the committed files its arguments name.

A page with blocks starts with :data:`DOCS_HEADER`, which :func:`fill_blocks` puts there.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

from fedrec.errors import ConfigError
from fedrec.reproduce.report import markdown_table

BLOCK = re.compile(r"^(<!-- fedrec-generated: (.+?) -->\n)(.*?)^(<!-- /fedrec-generated -->)$",
                   re.MULTILINE | re.DOTALL)
#: The first line of a page with generated blocks.
DOCS_HEADER = ("<!-- The blocks between fedrec-generated comments are written by `fedrec pages` "
               "from the files each comment names; edit the prose around them, not a block. -->")


def has_blocks(text: str) -> bool:
    """Whether a page holds at least one generated block."""
    return BLOCK.search(text) is not None


def fill_blocks(text: str, root: Path, page: str) -> str:
    """``text`` with :data:`DOCS_HEADER` as its first line and every block rendered again from
    the files under the checkout ``root`` (``page`` names the page in errors)."""
    def render(match: re.Match[str]) -> str:
        body = render_source(match.group(2), root, page)
        return f"{match.group(1)}\n{body.rstrip()}\n\n{match.group(4)}"

    filled = BLOCK.sub(render, text)
    if not filled.startswith(DOCS_HEADER + "\n"):
        filled = f"{DOCS_HEADER}\n{filled}"
    return filled


def render_source(source: str, root: Path, page: str) -> str:
    """The markdown of one block's ``source`` (the module docstring lists the forms)."""
    words = shlex.split(source)
    if words[:2] == ["fedrec", "results"]:
        return results_table(words[2:], root, page)
    if len(words) == 2 and words[0] == "bench":
        return bench_tables(root / words[1], words[1])
    if words[:1] == ["table"]:
        from fedrec.reproduce.tables import render_table

        return render_table(words[1:], root, page)
    raise ConfigError(f"{page}: a generated block's source is `fedrec results ...`, "
                      f"`bench FILE.json` or `table NAME ARG...`, not {source!r}")


def results_table(args: list[str], root: Path, page: str) -> str:
    """``fedrec results PATTERN... --markdown [--metrics M1,M2]``'s table, the runs named by
    their paths relative to ``root``."""
    from fedrec.reproduce.compare import find_runs, render

    patterns: list[str] = []
    metrics: list[str] | None = None
    markdown = False
    rest = iter(args)
    for word in rest:
        if word == "--markdown":
            markdown = True
        elif word == "--metrics":
            metrics = [m for m in next(rest, "").split(",") if m]
        elif word.startswith("-"):
            raise ConfigError(f"{page}: a generated `fedrec results` takes patterns, --markdown "
                              f"and --metrics, not {word}")
        else:
            patterns.append(word)
    if not markdown:
        raise ConfigError(f"{page}: a generated `fedrec results` block needs --markdown")
    files = sorted({p for pattern in patterns for p in root.glob(pattern)})
    if not files:
        raise ConfigError(f"{page}: no file matches {' '.join(patterns)} under {root}")
    runs = [replace(run, path=run.path.relative_to(root)) for run in find_runs(files)]
    return render(runs, markdown=True, metrics=metrics)


def bench_tables(path: Path, name: str) -> str:
    """A benchmark's JSON as markdown: its ``command``, then a table of its top-level values, a
    table of each list of records (a row per record) and of each mapping of records (a row per
    key; sibling mappings of values with the same fields, e.g. one per dataset, are such
    records too), and, for a mapping of anything else, the same under its name. Numbers are
    shown to 4 significant digits (:func:`_cell`); nothing is computed."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{name}: no such benchmark file") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{name}: not a readable benchmark JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("command"), str):
        raise ConfigError(f"{name}: a benchmark JSON records the command that made it as "
                          f"\"command\"; this one does not")
    parts = [f"`{data['command']}` (`{name}`):\n"]
    parts += _sections({k: v for k, v in data.items() if k != "command"}, "")
    return "\n".join(parts)


def _sections(data: dict[str, Any], title: str) -> list[str]:
    """The tables of one mapping (:func:`bench_tables`), ``title`` naming where it is."""
    out: list[str] = []
    cells = [(k, v) for k, v in data.items() if _is_cell(v)]
    if cells:
        out.append(_titled(title, markdown_table(["", "value"],
                                                 [[k, _cell(v)] for k, v in cells])))
    # Mappings of values with the same fields (one per dataset, say): one table, a row each.
    flat = {k: v for k, v in data.items()
            if isinstance(v, dict) and not _is_cell(v) and all(map(_is_cell, v.values()))}
    alike = len(flat) > 1 and len({frozenset(v) for v in flat.values()}) == 1
    if alike:
        out.append(_titled(title, _records(list(flat), list(flat.values()))))
    for key, value in data.items():
        where = f"{title} / {key}" if title else key
        if _is_cell(value) or (alike and key in flat):
            continue
        if isinstance(value, list):  # records: a row each
            out.append(_titled(where, _records(None, value)))
        elif all(isinstance(r, dict) for r in value.values()):  # records by key
            out.append(_titled(where, _records(list(value), list(value.values()))))
        else:
            out += _sections(value, where)
    return out


def _records(keys: list[str] | None, records: list[dict[str, Any]]) -> str:
    """A table of records, a row per record (under its key where they have keys), a column per
    field in first-seen order (a record without the field shows ``–``)."""
    columns = list(dict.fromkeys(k for r in records for k in r))
    rows = [[_cell(r[c]) if c in r else "–" for c in columns] for r in records]
    if keys is None:
        return markdown_table(columns, rows)
    return markdown_table(["", *columns], [[k, *row] for k, row in zip(keys, rows, strict=True)])


def _titled(title: str, table: str) -> str:
    return f"**{title}**\n\n{table}" if title else table


def _is_cell(value: Any) -> bool:
    """A value shown in one cell: anything but a non-empty mapping or list of mappings."""
    if isinstance(value, dict):
        return not value
    if isinstance(value, list):
        return not value or not all(isinstance(v, dict) for v in value)
    return True


def _cell(value: Any) -> str:
    """A value as a cell: a number to 4 significant digits (at least its integer part, with
    thousands separators), a list of scalars joined by commas, anything else nested as compact
    JSON."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, list) and not any(isinstance(v, list | dict) for v in value):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":")).replace("|", "\\|")
    return str(value).replace("|", "\\|")
