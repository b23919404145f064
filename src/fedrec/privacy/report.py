"""What a run's privacy report says, in one shape for every algorithm (``results.json["privacy"]``).

Every report has ``guarantee`` (what is proved, in words) and ``epsilon``:

* With a formal guarantee, ``epsilon`` bounds what a party actually releases over the whole run
  (for local DP: a client's whole upload, composed over the rounds it took part in), with
  ``delta`` and ``epsilon_method`` (the accountant's method). Figures that bound less (one
  coordinate of an upload, one round) may follow, named for what they cover and never as
  ``epsilon``.
* Without one (pseudo items, sampling and swapping, secure aggregation, encryption),
  ``guarantee`` is :data:`NO_GUARANTEE` and ``epsilon`` is None; ``protection`` names what
  protects the data and, where fedrec has an attack on it, ``measured_attack`` names the attack
  and ``measured_attack_f1`` is its F1 measured during the run (None: not measured, and
  ``measured_attack`` says how to measure it). An attack's F1 is what that attack achieved, a
  lower bound on what a server can learn, not a bound.

:func:`run_epsilon`, :func:`per_upload_epsilon` and :func:`per_coordinate_epsilon` read the
figures back from a report, also from a ``results.json`` written before these fields existed
(FedGNN's old top-level ``epsilon`` composed the per-coordinate figure, and its old
``epsilon_per_upload`` was per coordinate: neither is read as a whole-upload figure).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NO_GUARANTEE", "attack_fields", "no_guarantee", "per_coordinate_epsilon",
           "per_upload_epsilon", "run_epsilon"]

NO_GUARANTEE = "no formal guarantee"


def attack_fields(name: str, f1: float | None, how_to_measure: str = "",
                  **details: Any) -> dict[str, Any]:
    """``measured_attack`` / ``measured_attack_f1`` (+ details) of an attack run as an observer.

    ``f1`` None: the attack did not run; ``measured_attack`` then says ``how_to_measure``.
    """
    if f1 is None:
        return {"measured_attack": f"{name}: not measured" + (f"; {how_to_measure}"
                                                              if how_to_measure else ""),
                "measured_attack_f1": None}
    return {"measured_attack": name, "measured_attack_f1": float(f1), **details}


def no_guarantee(protection: str, leakage: str, **extra: Any) -> dict[str, Any]:
    """A report for a mechanism with no formal bound: ``epsilon`` None, what protects the data
    (``protection``) and what the other parties still learn (``leakage``)."""
    return {"guarantee": NO_GUARANTEE, "epsilon": None, "protection": protection,
            "leakage": leakage, **extra}


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
