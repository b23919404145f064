"""The defenses against malicious clients by name: what each takes, whether a server that sees
only a sum can use it, the check of a run's choice before training, and the one call a server
makes on a cohort's sparse row updates (:func:`robust_sum`).

Every defense returns an estimate of the SUM of the benign updates. Only ``none`` and
``norm_bound`` work with a server that sees only the cohort's sum (secure aggregation, the DP
aggregate), and ``norm_bound`` only as a bound the clients apply themselves: the server cannot
check it inside a secure sum, so such a mode trusts the clients' bounding and a client that
does not bound is not caught. The median, the trimmed mean, multi-Krum and the per-item rules
need every client's update in clear.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch

from fedrec.errors import ConfigError, NoUpdateError
from fedrec.federation.aggregation.coordinate import (
    check_beta,
    coordinate_median,
    per_item,
    trimmed_mean,
)
from fedrec.federation.aggregation.krum import check_krum, multi_krum
from fedrec.federation.aggregation.norm import norm_bounded_sum
from fedrec.federation.aggregation.sums import sum_rows
from fedrec.federation.aggregation.updates import RowUpdates

__all__ = ["DEFENSES", "Defense", "Param", "check_defense", "robust_sum"]


@dataclass(frozen=True)
class Param:
    """One parameter of a defense: its name, type (``float``, ``int`` or ``bool``) and default
    (None: the run must give it)."""

    name: str
    kind: type
    default: float | int | bool | None
    doc: str


@dataclass(frozen=True)
class Defense:
    """A defense: its name, parameters, whether it needs each client's update in clear (not
    usable with secure aggregation or the DP aggregate), whether it is applied by the clients in
    a secure mode, and its rule and guarantee in one line."""

    name: str
    params: tuple[Param, ...]
    needs_clear_updates: bool
    client_applied_when_secure: bool
    rule: str

    @property
    def secure_compatible(self) -> bool:
        """Usable by a server that sees only the cohort's sum."""
        return not self.needs_clear_updates


_BETA = Param("beta", float, 0.1, "fraction dropped at each end, in [0, 0.5)")
_BOUND_ROWS = Param("bound_rows", bool, False,
                    "bound each sent row to the cohort's median row norm first")

DEFENSES: Mapping[str, Defense] = MappingProxyType({d.name: d for d in (
    Defense("none", (), False, False, "the plain sum; one client moves it arbitrarily"),
    Defense("norm_bound", (Param("bound", float, None, "L2 bound of a client's update"),),
            False, True, "sum of updates scaled to L2 <= bound; f clients move it <= f·bound"),
    Defense("median", (), True, False,
            "n · coordinate-wise median; tolerates f < n/2 per coordinate"),
    Defense("trimmed_mean", (_BETA,), True, False,
            "n · coordinate-wise beta-trimmed mean; tolerates f <= floor(beta·n)"),
    Defense("krum", (Param("f", int, None, "attackers tolerated; n > 2f+2"),
                     Param("m", int, None, "updates kept, 1..n-f (default n-f)")),
            True, False, "(n/m) · sum of the m multi-Krum choices; tolerates f, n > 2f+2"),
    Defense("item_median", (_BOUND_ROWS,), True, False,
            "per item: m_r · median of its m_r contributors; tolerates < m_r/2 of them"),
    Defense("item_trimmed_mean", (_BETA, _BOUND_ROWS), True, False,
            "per item: m_r · trimmed mean of its contributors; tolerates floor(beta·m_r)"),
)})
"""Every defense by name."""


def check_defense(name: str, *, secure: bool, cohort: int,
                  params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The defense's parameters, each given one or its default, checked before training; a
    one-line :class:`ConfigError` for an unknown defense or parameter, a missing or mistyped
    value, a defense that needs clear updates in a ``secure`` run (one whose server sees only a
    sum), Krum with ``cohort`` too small for its ``f`` (``n > 2f + 2``) or an ``m`` outside
    ``[1, n - f]``, a ``beta`` outside ``[0, 0.5)``, or a ``bound`` that is not > 0."""
    if name not in DEFENSES:
        raise ConfigError(f"unknown defense {name!r}; choose one of {', '.join(DEFENSES)}")
    defense = DEFENSES[name]
    if secure and defense.needs_clear_updates:
        allowed = ", ".join(d.name for d in DEFENSES.values() if d.secure_compatible)
        raise ConfigError(f"defense {name} needs each client's update in clear; a server that "
                          f"sees only a sum (secure aggregation, dp) can use: {allowed}")
    given = dict(params or {})
    unknown = sorted(set(given) - {p.name for p in defense.params})
    if unknown:
        raise ConfigError(f"defense {name} has no parameter {unknown[0]!r}; it takes: "
                          f"{', '.join(p.name for p in defense.params) or 'none'}")
    values = {p.name: _value(name, p, given.get(p.name, p.default)) for p in defense.params}
    if "beta" in values:
        check_beta(values["beta"])
    if name == "norm_bound" and not 0.0 < values["bound"] < math.inf:
        raise ConfigError(f"defense norm_bound: bound must be a finite number > 0, "
                          f"got {values['bound']}")
    if name == "krum":
        check_krum(cohort, values["f"], values["m"])
    return values


def _value(name: str, param: Param, value: Any) -> Any:
    """``value`` as the parameter's type; None only for Krum's ``m``."""
    if value is None:
        if param.name == "m":
            return None
        raise ConfigError(f"defense {name} needs its parameter {param.name} ({param.doc})")
    if param.kind is bool and isinstance(value, bool):
        return value
    if param.kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if param.kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise ConfigError(f"defense {name}: {param.name} must be a {param.kind.__name__}, "
                      f"got {value!r}")


def robust_sum(defense: str, ids: Sequence[torch.Tensor], rows: Sequence[torch.Tensor],
               num_rows: int, params: Mapping[str, Any] | None = None) -> torch.Tensor:
    """The named defense's estimate of the benign sum of a cohort's sparse row updates (client
    ``i`` sent ``rows[i][k]`` for row ``ids[i][k]`` of a ``num_rows``-row table), as a dense
    ``[num_rows, *row shape]`` table in the rows' dtype; ``params`` checked as
    :func:`check_defense` with the cohort's size (a server in clear).

    ``none`` is :func:`~.sums.sum_rows` over the concatenated uploads, bit for bit the sum an
    undefended server takes; ``median`` and ``trimmed_mean`` count a row a client did not send
    as zeros (:mod:`.coordinate`: on sparse item updates they move almost nothing)."""
    if not rows:
        raise NoUpdateError(f"defense {defense}: no client update to aggregate")
    values = check_defense(defense, secure=False, cohort=len(ids), params=params)
    if defense == "none":
        return sum_rows(torch.cat(list(ids)), torch.cat(list(rows)), num_rows)
    updates = RowUpdates.of(ids, rows, num_rows)
    if defense == "norm_bound":
        return norm_bounded_sum(updates, values["bound"])
    if defense == "median":
        return coordinate_median(updates)
    if defense == "trimmed_mean":
        return trimmed_mean(updates, values["beta"])
    if defense == "krum":
        return multi_krum(updates, values["f"], values["m"])
    rule = "median" if defense == "item_median" else "trimmed_mean"
    return per_item(updates, rule, values.get("beta", 0.0), bound_rows=values["bound_rows"])
