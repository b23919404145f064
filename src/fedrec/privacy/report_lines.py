"""A :class:`~fedrec.privacy.report.PrivacyReport` in short lines: one per entry, one per
measured attack beside a guarantee, one per caveat, each ``label: text`` of at most
:data:`LINE_WIDTH` characters. The CLI summary prints these (``fedrec run``, ``fedrec deploy``,
a results.json read back); whatever shows a report shows these lines.

* A guarantee: ``privacy: user-level DP against the server, epsilon 7.99 (delta 1e-05, rdp)``;
  the unit and threat are their first phrases (before ": " or " ("; the threat is dropped
  where the line would not fit), the method likewise; delta 0 reads ``pure``.
  The rule (:data:`~fedrec.privacy.report.WEAK_EPSILON`, ``MEANINGLESS_EPSILON``): above 10
  the line adds ``a weak bound``; above 100 ``bounds nothing useful``, e.g. ``epsilon
  1.3e+07: bounds nothing useful`` (FedGNN's local DP composed over a client's uploads).
* No formal guarantee: ``privacy (item ids): no formal guarantee (pseudo items); measured
  attack F1 0.440 (RatedItemsAttack)``, or ``...; RatedItemsAttack not measured: set
  measure_leakage=true``.
* A caveat: ``caveat (graph expansion): ...``.

A text that does not fit is cut at the last clause boundary (", ", "; ", ": ", " (" outside
brackets) that fits and ends with " ..."; the whole text is in results.json.
"""

from __future__ import annotations

from fedrec.privacy.report import (
    MEANINGLESS_EPSILON,
    NO_GUARANTEE,
    WEAK_EPSILON,
    Attack,
    Entry,
    Guarantee,
    PrivacyReport,
)

__all__ = ["LINE_WIDTH", "head", "lines", "rows", "shorten"]

LINE_WIDTH = 100
_MORE = " ..."
_OPEN, _CLOSE = "([{", ")]}"


def rows(report: PrivacyReport, width: int = LINE_WIDTH) -> list[tuple[str, str]]:
    """``(label, text)`` per line (module docstring); ``label: text`` fits in ``width``."""
    out: list[tuple[str, str]] = []
    for entry in report.entries:
        label = "privacy" + (f" ({entry.part.replace('_', ' ')})" if entry.part else "")
        room = width - len(label) - 2
        if isinstance(entry, Guarantee):
            out.append((label, _guarantee(entry, room)))
            if entry.attack is not None:
                out.append((label, _attack(entry.attack, room)))
        else:
            out.append((label, _no_guarantee(entry, room)))
    for c in report.caveats:
        label = f"caveat ({c.key.replace('_', ' ')})"
        out.append((label, shorten(c.text, width - len(label) - 2)))
    return out


def lines(report: PrivacyReport, width: int = LINE_WIDTH) -> list[str]:
    """The report's lines, ``label: text``."""
    return [f"{label}: {text}" for label, text in rows(report, width)]


def shorten(text: str, width: int) -> str:
    """``text`` if it fits in ``width``, else its longest prefix ending at a clause boundary
    outside brackets (or a space) that fits with " ..." after it."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    room = max(width - len(_MORE), 0)
    cut = _last_boundary(text, room)
    if cut is None:
        space = text.rfind(" ", 0, room + 1)
        cut = space if space > 0 else room
    return text[:cut].rstrip(" ,;:") + _MORE


def head(text: str) -> str:
    """The first phrase of ``text``: up to its first ": ", " (" or "; " outside brackets."""
    depth = 0
    for i, ch in enumerate(text):
        if depth == 0 and text[i:i + 2] in (": ", " (", "; "):
            return text[:i]
        depth += (ch in _OPEN) - (ch in _CLOSE)
    return text


def _last_boundary(text: str, limit: int) -> int | None:
    depth, best = 0, None
    for i, ch in enumerate(text[:limit + 1]):
        if depth == 0 and i > 0 and text[i:i + 2] in (", ", "; ", ": ", " ("):
            best = i
        depth += (ch in _OPEN) - (ch in _CLOSE)
    return best


def _number(x: float) -> str:
    return f"{x:.3g}"


def _guarantee(g: Guarantee, room: int) -> str:
    eps = f"epsilon {_number(g.epsilon)}"
    if g.epsilon > MEANINGLESS_EPSILON:
        eps += ": bounds nothing useful"
    elif g.epsilon > WEAK_EPSILON:
        eps += ": a weak bound"
    how = [] if g.delta is None else ["pure" if g.delta == 0 else f"delta {_number(g.delta)}"]
    how.append(head(g.method) if g.method else "method not recorded")
    tail = f", {eps} ({', '.join(how)})"
    room -= len(tail)
    unit, threat = head(g.unit), head(g.threat)
    for what in ((f"{unit} DP {threat}", f"{unit} DP") if unit and threat else ()):
        if len(what) <= room:
            return what + tail
    return shorten(head(g.statement) or "a formal guarantee", max(room, 12)) + tail


def _no_guarantee(e: Entry, room: int) -> str:
    assert not isinstance(e, Guarantee)
    lead = NO_GUARANTEE + (f" {head(e.threat)}" if e.threat else "")
    attack = f"; {_attack(e.attack, room - len(lead) - 2)}" if e.attack is not None else ""
    why = e.protection or e.leakage or ""
    if e.statement not in (NO_GUARANTEE, "none") and not e.statement.startswith(NO_GUARANTEE):
        why = e.statement  # a guarantee against another threat only
    why = why.removeprefix(NO_GUARANTEE).lstrip(": ")
    budget = room - len(lead) - len(attack) - 3
    inner = shorten(why, budget) if why and budget >= 16 else ""
    return lead + (f" ({inner})" if inner else "") + attack


def _attack(a: Attack, room: int) -> str:
    name = head(a.name).split(" ")[0] if a.f1 is not None else head(a.name)
    if a.f1 is not None:
        return shorten(f"measured attack F1 {a.f1:.3f} ({name})", room)
    if a.outcome:
        return shorten(f"measured {name}: {a.outcome}", room)
    return shorten(f"{name} not measured" + (f": {a.how_to_measure}" if a.how_to_measure
                                              else ""), room)
