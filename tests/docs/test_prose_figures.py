"""No measured figure is typed by hand into the docs' prose (issue 39, "Done when"): a figure
lives on a generated page (``results/**``, written by ``fedrec reproduce``) or in a generated
block, and prose says where to look.

What is scanned: README.md, every page under ``docs/`` and every hand-written results page
(``results/**/*.md`` but the pages ``fedrec pages`` writes whole from a bench's JSON,
:data:`fedrec.reproduce.bench_pages.BENCH_PAGES`), minus fenced code, inline code
(commands and option values), link targets, HTML comments, the options tables the site makes
from the config dataclasses (``<!-- fedrec-options: X -->`` ... ``<!-- /fedrec-options -->``)
and generated blocks (``<!-- fedrec-generated: SOURCE -->`` ... ``<!-- /fedrec-generated -->``,
:data:`fedrec.reproduce.blocks.BLOCK`, or a whole page that starts as a reproduction's report
does, :data:`fedrec.reproduce.pages.GENERATED_PAGE`). What counts as a figure: a decimal
(``0.807``, ``2.7x``, ``3.4e-10``) or a percentage (``65%``). The allow-list, :data:`ALLOWED`:
version numbers, arXiv ids, a delta, a paper's published figure or an issue's target stated
as such (``published 0.815``, ``target >= 0.80``), and an option's default or value stated
beside its name (``default 0.2``, ```dp_delta` (1e-5)``), which are constants, not
measurements.

Any figure in prose fails the test, with its page and line.
"""

from __future__ import annotations

import re
from pathlib import Path

from fedrec.reproduce.bench_pages import BENCH_PAGES
from fedrec.reproduce.blocks import BLOCK
from fedrec.reproduce.pages import GENERATED_PAGE

REPO = Path(__file__).resolve().parents[2]
#: Regions that are not prose (their newlines are kept, so lines still count right).
NOT_PROSE = re.compile("|".join((
    r"^ {0,3}(```|~~~).*?^ {0,3}\1[ \t]*$",                              # fenced code
    r"^<!-- fedrec-options: [\w-]+ -->$.*?^<!-- /fedrec-options -->$",   # options tables
    BLOCK.pattern,                                                       # generated blocks
    r"<!--.*?-->",                                                       # comments
    r"\]\([^)\s]*\)",                                                    # link targets
)), re.MULTILINE | re.DOTALL)
#: Inline code (commands, option names and values): replaced by :data:`CODE`.
INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
CODE = "\x00"
#: A figure: a decimal (with an exponent, or as a factor ``2.7x``) or a percentage.
FIGURE = re.compile(r"(?<![\w.])(?:\d*\.\d+(?:[eE][-+]?\d+)?(?:x\b|\s?%)?|\d+(?:[eE]-\d+|\s?%))"
                    r"(?![\w.]*\d)")
#: Constants, not measurements: what stands just before such a number.
ALLOWED = {
    "version": re.compile(r"(?:Python|Flower|flwr|torch|version|v)\s?(?:==|>=|<)?\s?$", re.I),
    "arXiv id": re.compile(r"arXiv[: ]\s?$", re.I),
    "default": re.compile(r"default(?:s| is| of)?[:=]?\s?$", re.I),
    "delta": re.compile(r"(?:delta|δ)\s?(?:=|of)?\s?$", re.I),
    "published or target": re.compile(r"(?:published|target)\s?(?:>=|≥|:)?\s?$", re.I),
    "an option's value": re.compile(CODE + r"\s?[(:=]\s?$"),  # `dp_delta` (1e-5)
}


def pages() -> list[Path]:
    """README.md, the docs pages and the results pages not written whole by ``fedrec pages``
    from a bench's JSON (a reproduction's report is skipped by :func:`figures`: it starts with
    :data:`GENERATED_PAGE`)."""
    bench = {REPO / page.page for page in BENCH_PAGES.values()}
    return [REPO / "README.md",
            *sorted(p for p in (REPO / "docs").rglob("*.md") if "hooks" not in p.parts),
            *sorted(p for p in (REPO / "results").rglob("*.md") if p not in bench)]


def figures(text: str) -> list[tuple[int, str]]:
    """The hand-typed figures of a markdown ``text``: (line, figure), in order."""
    if text.startswith(GENERATED_PAGE):
        return []
    prose = NOT_PROSE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    prose = INLINE_CODE.sub(lambda m: CODE + "\n" * m.group(0).count("\n"), prose)
    found = []
    for match in FIGURE.finditer(prose):
        before = prose[max(0, match.start() - 12):match.start()]
        if not any(rule.search(before) for rule in ALLOWED.values()):
            found.append((prose.count("\n", 0, match.start()) + 1, match.group(0)))
    return found


def test_no_figure_is_typed_into_prose() -> None:
    found = {p.relative_to(REPO).as_posix(): figures(p.read_text(encoding="utf-8"))
             for p in pages()}
    lines = [f"{page}: " + ", ".join(f"line {k}: {fig}" for k, fig in f[:8])
             for page, f in sorted(found.items()) if f]
    assert not lines, ("figures typed by hand into prose (generate them, or say where to "
                       "look):\n" + "\n".join(lines))


def test_what_counts_as_a_figure() -> None:
    text = "\n".join([
        "Feras reaches 0.807 on Cora, 65% of the way, 2.7x slower, to ~3.4e-10.",
        "Python 3.11, Flower 1.42, arXiv:2004.04256, `--set lr=0.01`, default 0.2, `lr` (0.5)",
        "```bash", "fedrec run pmf --set lr=0.05", "```",
        "<!-- fedrec-generated: fedrec results runs/ -->", "| pmf | 0.93 |",
        "<!-- /fedrec-generated -->",
        "<!-- fedrec-options: pmf -->", "| lr | 0.01 |", "<!-- /fedrec-options -->",
        "[a page](results/0.5.md) then 12.5 %",
        "Kipf & Welling published 0.815; target >= 0.80; reached 0.81",
    ])
    assert figures(text) == [(1, "0.807"), (1, "65%"), (1, "2.7x"), (1, "3.4e-10"),
                             (12, "12.5 %"), (13, "0.81")]
    assert figures(GENERATED_PAGE + "fedrec reproduce x` -->\n0.807\n") == []
