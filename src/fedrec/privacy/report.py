"""A run's privacy report: one type, :class:`PrivacyReport`, for every algorithm; its JSON is
``results.json["privacy"]``.

A report is a list of entries, each one of two kinds, and short caveats:

* :class:`Guarantee`: a formal (epsilon, delta) bound. ``epsilon`` bounds what a party actually
  releases over the whole run (for local DP: a client's whole upload, composed over the rounds
  it took part in), for a ``unit`` (whose data two neighbouring inputs differ in) against a
  ``threat`` (who observes), obtained by ``method`` (the accountant's); ``statement`` says what
  it covers. Figures that bound less (one coordinate of an upload, one round) may follow in its
  ``details``, named for what they cover and never as ``epsilon``.
* :class:`NoGuarantee`: no formal bound (pseudo items, sampling and swapping, secure
  aggregation, encryption): ``protection`` names what protects the data, ``leakage`` what the
  other parties still learn and, where fedrec has an attack on it, :class:`Attack` names the
  attack and its F1 measured during the run, or says how to measure it. An attack's F1 is what
  that attack achieved, a lower bound on what a server can learn, not a bound.
* :class:`Caveat`: a fact the entries do not cover (the graph expansion's messages in clear,
  where the clients' randomness comes from), under a key of :data:`CAVEAT_KEYS`.

The first entry is the run's own (its fields are the top level of the JSON); every other entry
is a named ``part`` (FedGNN's ``item_ids``, Feras's ``embedding_uploads``) and is nested under
that key, except ``released_model`` (a DP aggregate's second threat), which is the top-level
``epsilon_released_model`` as it always was. :meth:`PrivacyReport.to_json` writes the keys
results.json has always had (``guarantee``, ``epsilon``, ``delta``, ``epsilon_method``,
``protection``, ``leakage``, ``measured_attack``, ``measured_attack_f1``, the parts, the free
keys of each entry's ``details``); :meth:`PrivacyReport.from_json` reads them back, also from a
``results.json`` written before this type (then ``to_json`` of what it read gives the record
back with at most the keys of a new one added). The summary's lines are :mod:`.report_lines`.

:func:`run_epsilon`, :func:`per_upload_epsilon` and :func:`per_coordinate_epsilon` read the
figures back from a report's JSON, also from a ``results.json`` written before these fields
existed (FedGNN's old top-level ``epsilon`` composed the per-coordinate figure, and its old
``epsilon_per_upload`` was per coordinate: neither is read as a whole-upload figure).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["CAVEAT_KEYS", "CENTRALIZED", "MEANINGLESS_EPSILON", "NO_GUARANTEE",
           "RELEASED_MODEL", "WEAK_EPSILON", "Attack", "Caveat", "Entry", "Guarantee",
           "NoGuarantee", "PrivacyReport", "per_coordinate_epsilon", "per_upload_epsilon",
           "released_model_guarantee", "run_epsilon"]

NO_GUARANTEE = "no formal guarantee"

#: Above this epsilon a guarantee is weak: ``exp(10)``, about 22,000, is how much everything
#: the unit released may multiply an observer's odds on any fact about its data (a fact held at
#: even odds may become 99.995% certain). Above :data:`MEANINGLESS_EPSILON` (``exp(100)``,
#: 2.7e43, more than any prior can absorb) it bounds nothing useful. The summary says so
#: (:mod:`.report_lines`).
WEAK_EPSILON = 10.0
MEANINGLESS_EPSILON = 100.0

#: The top-level keys whose text is a :class:`Caveat` (a key not here is an entry's detail).
CAVEAT_KEYS = ("client_randomness", "graph_expansion", "item_ids", "ldp_scope",
               "paper_mechanisms", "user_sub_models")

#: The part of a DP aggregate's guarantee against the released model only; its JSON is the
#: top-level ``epsilon_released_model`` (:func:`released_model_guarantee`).
RELEASED_MODEL = "released_model"

_NOT_MEASURED = ": not measured"


@dataclass(frozen=True)
class Attack:
    """An attack run as an observer of what a party receives.

    ``name`` says what the attack does (its first word, its class: the summary shows that);
    ``f1`` is its mean F1 measured in this run. A measurement that is not an F1 is ``outcome``
    in words (Feras's AUCs); ``f1`` None and no ``outcome``: not measured, and
    ``how_to_measure`` says how. JSON: ``measured_attack`` (``name``, ``"name: outcome"`` or
    ``"name: not measured; how"``) and ``measured_attack_f1``."""

    name: str
    f1: float | None = None
    outcome: str = ""
    how_to_measure: str = ""

    def __post_init__(self) -> None:
        if self.outcome and ": " in self.name:
            raise ValueError(f"an attack with an outcome needs a name without ': ': {self.name}")
        if self.f1 is not None and (self.outcome or self.how_to_measure):
            raise ValueError("an attack with an F1 has no outcome nor how_to_measure")

    @property
    def measured(self) -> bool:
        return self.f1 is not None or bool(self.outcome)

    def to_json(self) -> dict[str, Any]:
        if self.f1 is not None:
            text = self.name
        elif self.outcome:
            text = f"{self.name}: {self.outcome}"
        else:
            text = self.name + _NOT_MEASURED + (f"; {self.how_to_measure}"
                                                if self.how_to_measure else "")
        return {"measured_attack": text, "measured_attack_f1": self.f1}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Attack:
        text, f1 = str(d["measured_attack"]), d.get("measured_attack_f1")
        if f1 is not None:
            return cls(text, float(f1))
        if _NOT_MEASURED in text:
            name, how = text.split(_NOT_MEASURED, 1)
            return cls(name, how_to_measure=how.removeprefix("; "))
        name, _, outcome = text.partition(": ")
        return cls(name, outcome=outcome) if outcome else cls(text)


_COMMON = ("guarantee", "epsilon", "unit", "threat", "measured_attack", "measured_attack_f1")


@dataclass(frozen=True)
class Guarantee:
    """A formal (epsilon, delta) guarantee (module docstring). ``unit`` and ``threat`` lead
    with a short phrase ("user-level", "against the server") that the summary shows; any
    explanation follows it after ": ". ``delta`` None: not recorded (an old results.json)."""

    statement: str
    epsilon: float
    delta: float | None
    method: str
    unit: str = ""
    threat: str = ""
    part: str = ""
    attack: Attack | None = None
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)

    RESERVED = (*_COMMON, "delta", "epsilon_method")

    def __post_init__(self) -> None:
        _check_details(self)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"guarantee": self.statement} if self.statement else {}
        out["epsilon"] = self.epsilon
        out.update(_optional(delta=self.delta, epsilon_method=self.method or None,
                             unit=self.unit, threat=self.threat))
        return {**out, **(self.attack.to_json() if self.attack else {}), **self.details}


@dataclass(frozen=True)
class NoGuarantee:
    """No formal guarantee (module docstring): what protects the data, what leaks, the measured
    attack. ``statement`` is the JSON's ``guarantee``: :data:`NO_GUARANTEE`, or the sentence of
    a guarantee that holds against another threat only (a DP aggregate without masking:
    against the released model, not the server). None: not stated (an old results.json)."""

    protection: str | None
    leakage: str | None = None
    attack: Attack | None = None
    statement: str = NO_GUARANTEE
    unit: str = ""
    threat: str = ""
    part: str = ""
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)

    RESERVED = (*_COMMON, "protection", "leakage")

    def __post_init__(self) -> None:
        _check_details(self)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"guarantee": self.statement, "epsilon": None}
        out.update(_optional(protection=self.protection, leakage=self.leakage, unit=self.unit,
                             threat=self.threat))
        return {**out, **(self.attack.to_json() if self.attack else {}), **self.details}


Entry = Guarantee | NoGuarantee


@dataclass(frozen=True)
class Caveat:
    """A fact the entries do not cover, in a short line; ``key`` is its results.json key, one
    of :data:`CAVEAT_KEYS`."""

    key: str
    text: str

    def __post_init__(self) -> None:
        if self.key not in CAVEAT_KEYS:
            raise ValueError(f"caveat key {self.key!r} is not one of {CAVEAT_KEYS}")


@dataclass(frozen=True)
class PrivacyReport:
    """A run's privacy report (module docstring): ``entries[0]`` is the run's own, the others
    named parts; ``server_receives`` says what the server receives, by step
    (:meth:`fedrec.algorithms.base.ServerLogic.receives`; empty: not stated)."""

    entries: tuple[Entry, ...]
    caveats: tuple[Caveat, ...] = ()
    server_receives: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        # One order for equal reports: the released model's entry right after the run's own
        # (its JSON is a top-level key), caveats in the order of CAVEAT_KEYS.
        entries = tuple(self.entries)
        entries = entries[:1] + tuple(sorted(entries[1:], key=lambda e: e.part != RELEASED_MODEL))
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "caveats", tuple(sorted(
            self.caveats, key=lambda c: CAVEAT_KEYS.index(c.key))))
        if not self.entries or self.entries[0].part:
            raise ValueError("a privacy report starts with the run's own entry (part '')")
        top = self.entries[0].details
        keys = [e.part for e in self.entries[1:]] + [c.key for c in self.caveats]
        taken = [k for k in keys if not k or keys.count(k) > 1 or k in top
                 or f"epsilon_{k}" in top]
        if taken:
            raise ValueError(f"report parts and caveats must be distinct and named: {taken}")
        for e in self.entries[1:]:
            if e.part == RELEASED_MODEL and (not isinstance(e, Guarantee) or e != (
                    released_model_guarantee(e.epsilon, e.delta, top))):
                raise ValueError("build the released model's entry with "
                                 "released_model_guarantee")

    @property
    def top(self) -> Entry:
        return self.entries[0]

    def with_caveat(self, key: str, text: str) -> PrivacyReport:
        """This report with one more :class:`Caveat`."""
        return replace(self, caveats=(*self.caveats, Caveat(key, text)))

    def with_details(self, **details: Any) -> PrivacyReport:
        """This report with more free keys on the run's own entry."""
        top = replace(self.top, details={**self.top.details, **details})
        return replace(self, entries=(top, *self.entries[1:]))

    def with_part(self, entry: Entry) -> PrivacyReport:
        """This report with one more named part."""
        return replace(self, entries=(*self.entries, entry))

    def with_receives(self, receives: Mapping[str, str]) -> PrivacyReport:
        return replace(self, server_receives=dict(receives))

    def to_json(self) -> dict[str, Any]:
        """``results.json["privacy"]`` (module docstring)."""
        out = self.top.to_json()
        for e in self.entries[1:]:
            if e.part == RELEASED_MODEL:
                out["epsilon_released_model"] = e.epsilon
            else:
                out[e.part] = e.to_json()
        out.update({c.key: c.text for c in self.caveats})
        if self.server_receives:
            out["server_receives"] = dict(self.server_receives)
        return out

    @classmethod
    def from_json(cls, privacy: Mapping[str, Any] | None) -> PrivacyReport:
        """The report a ``results.json["privacy"]`` holds, of this version or older (an empty
        or missing one: no formal guarantee, nothing stated)."""
        d = dict(privacy or {})
        receives = d.pop("server_receives", {})
        caveats = [Caveat(k, d.pop(k)) for k in CAVEAT_KEYS if isinstance(d.get(k), str)]
        parts = [_entry(d.pop(k), k) for k, v in list(d.items()) if _is_entry(v)]
        released = d.get("epsilon_released_model")
        if isinstance(released, int | float):
            del d["epsilon_released_model"]
            parts.append(released_model_guarantee(float(released), d.get("delta"), d))
        return cls((_entry(d, ""), *parts), tuple(caveats), receives)


def released_model_guarantee(epsilon: float, delta: float | None,
                             figures: Mapping[str, Any]) -> Guarantee:
    """A DP aggregate's guarantee against the released model only (its second threat, beside
    the server's): the noised sums, amplified by the Poisson sampling for observers without
    the run's config. ``epsilon`` is the smaller of ``figures``' RDP and PLD figures
    (``epsilon_released_model_rdp`` / ``_pld``); ``method`` names the one it is."""
    pld = figures.get("epsilon_released_model_pld")
    return Guarantee(
        "user-level DP of the released model: the noised sums, amplified by the Poisson "
        "sampling for observers without the run's config", epsilon, delta,
        "pld" if pld is not None and pld == epsilon else "rdp", unit="user-level",
        threat="against the released model", part=RELEASED_MODEL)


def _optional(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v not in (None, "")}


def _check_details(entry: Entry) -> None:
    clash = sorted(set(entry.details) & set(entry.RESERVED))
    if clash:
        raise ValueError(f"{type(entry).__name__} details may not hold its own fields: {clash}")


def _is_entry(value: Any) -> bool:
    return isinstance(value, Mapping) and any(k in value for k in ("guarantee", "epsilon",
                                                                   "measured_attack"))


def _entry(d: Mapping[str, Any], part: str) -> Entry:
    rest = dict(d)
    attack = Attack.from_json(rest) if "measured_attack" in rest else None
    eps = rest.get("epsilon")
    common = {"unit": rest.get("unit", ""), "threat": rest.get("threat", ""), "part": part,
              "attack": attack}
    if eps is not None:
        details = {k: v for k, v in rest.items() if k not in Guarantee.RESERVED}
        return Guarantee(str(rest.get("guarantee", "")), float(eps), rest.get("delta"),
                         str(rest.get("epsilon_method", "")), details=details, **common)
    details = {k: v for k, v in rest.items() if k not in NoGuarantee.RESERVED}
    return NoGuarantee(rest.get("protection"), rest.get("leakage"),
                       statement=rest.get("guarantee", NO_GUARANTEE), details=details, **common)


#: The report of a run whose trainer reports none (a centralized baseline), as the runner gives
#: it (:func:`fedrec.rounds.finish_result`).
CENTRALIZED = PrivacyReport((NoGuarantee(protection="none (centralized: all data at one party)",
                                         leakage="the trainer holds every rating"),))


def run_epsilon(privacy: Mapping[str, Any] | None) -> tuple[float | None, str]:
    """``(epsilon of the whole run, how it was obtained)`` from a privacy report, or
    ``(None, reason)`` where there is no formal guarantee.

    Reports of this version carry ``epsilon_method``; an older FedGNN report (no such field)
    gave the composition of the per-coordinate figure as ``epsilon``; its whole-vector figure
    is rebuilt from the fields it kept, by basic composition:
    ``epsilon_per_upload_vector * max_participation``.
    """
    p = dict(privacy or {})
    if _is_current(p) or p.get("epsilon") is None:
        eps = p.get("epsilon")
        return (None if eps is None else float(eps),
                str(p.get("epsilon_method") or p.get("guarantee") or NO_GUARANTEE))
    if "epsilon_per_upload_vector" in p and "max_participation" in p:
        return (float(p["epsilon_per_upload_vector"]) * int(p["max_participation"]),
                "basic composition of the whole upload over the most-participating client's "
                "rounds (rebuilt from an older results.json)")
    return float(p["epsilon"]), str(p.get("guarantee", ""))


def _is_current(p: Mapping[str, Any]) -> bool:
    return "epsilon_method" in p


def per_upload_epsilon(privacy: Mapping[str, Any] | None) -> float | None:
    """ε of one whole upload (local DP), None where the report has none."""
    p = dict(privacy or {})
    value = p.get("epsilon_per_upload") if _is_current(p) else p.get("epsilon_per_upload_vector")
    return None if value is None else float(value)


def per_coordinate_epsilon(privacy: Mapping[str, Any] | None) -> float | None:
    """The secondary per-coordinate ε of one upload (it bounds no release), None if absent."""
    p = dict(privacy or {})
    value = p.get("epsilon_per_coordinate_per_upload", p.get("epsilon_per_upload_coordinate"))
    return None if value is None else float(value)
