"""``fedrec reproduce poisoning``: malicious clients against every method that supports them,
with and without each defense (issue 40).

For each method and dataset of :data:`TARGETS` it runs, one seed each unless ``--seeds`` says
more:

* ``clean/M/D/DEFENSE``: no attacker (``malicious_fraction`` 0, the same targets drawn), under
  each defense: the benign accuracy a defense costs, and the targets' exposure without attack;
* ``attack/M/D/ATTACK/FRACTION``: every attack at every malicious fraction, undefended;
* ``defended/M/D/ATTACK/DEFENSE``: every attack at :data:`DEFENDED_FRACTION` under each defense;
* ``secure/M/D/ROW``: the method's secure mode (its ``dp`` preset, whose server sees only the
  noised sum, so no defense applies), without attack and under the crafted attack at
  :data:`DEFENDED_FRACTION`, the attackers clipping as the protocol asks and not clipping
  (:data:`UNCLIPPED_SCALE`: a norm the sum's ring still decodes; at the grid's own scale the
  decoding overflows and the round aborts).

Every figure is the run's last evaluation (the attack acts through the whole run; nothing is
selected on validation), over the benign users only: the targets' exposure ``ER@5``, ``ER@10``
and ``target_HR@10`` (:mod:`fedrec.metrics.exposure`) and the method's test metric.
``--quick`` (CI) runs two rounds of one attack and one defense: it tests the pipeline.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedrec.configs.measured import ROBUSTNESS_NAME
from fedrec.options import RunOptions
from fedrec.reproduce.report import finish_report, fmt, markdown_table, plot, write_measured
from fedrec.reproduce.runner import RunMissing, RunSpec, run_all

#: Each attack of the grid: its label and its options. ``crafted-norm1`` is the crafted attack
#: scaled to the attackers' own benign norm instead of ten times it: an attacker that knows a
#: distance-based defense (Krum) is in place and hides among the benign updates (the server's
#: Adam step normalises a row's magnitude, so the smaller norm costs it little).
ATTACK_OPTIONS: dict[str, dict[str, Any]] = {
    "random": {"poisoning": "random"},
    "popular": {"poisoning": "popular"},
    "crafted": {"poisoning": "crafted"},
    "crafted-norm1": {"poisoning": "crafted", "poisoning_scale": 1.0},
    "untargeted": {"poisoning": "untargeted"},
}
ATTACKS = tuple(ATTACK_OPTIONS)
#: The targeted attacks (the untargeted one lowers accuracy; it does not aim at exposure).
TARGETED = ("random", "popular", "crafted", "crafted-norm1")
#: The accuracy a default defense may cost without attack (issue 40: 2%).
DEFAULT_COST = 0.02
FRACTIONS = (0.001, 0.01, 0.05)
#: The fraction every defense is measured at (issue 40's figure: 1% attackers).
DEFENDED_FRACTION = 0.01
#: The secure rows' attackers that do not clip: their update's norm in multiples of their own
#: benign update's (unclipped, about a hundred times FCF's dp_clip). At the grid's own scale,
#: and at 1, the decoded sum overflows the ring and the round aborts (the run's failed.json
#: says so); an attacker that wants the round to go through stays under the bound.
UNCLIPPED_SCALE = 0.3
#: The secure rows: (key, overrides over the secure mode).
SECURE_ROWS = (
    ("clean", {"poisoning": "crafted", "malicious_fraction": 0.0}),
    ("crafted-clipped", {"poisoning": "crafted", "malicious_fraction": DEFENDED_FRACTION}),
    ("crafted-unclipped", {"poisoning": "crafted", "malicious_fraction": DEFENDED_FRACTION,
                           "poisoning_clip": False, "poisoning_scale": UNCLIPPED_SCALE}),
)


@dataclass(frozen=True)
class Target:
    """One method in the grid: its datasets, its test metric (and whether lower is better),
    its defenses (label: overrides) and the settings every run of it shares."""

    method: str
    datasets: tuple[str, ...]
    metric: str
    lower_is_better: bool
    defenses: dict[str, dict[str, Any]]
    common: dict[str, Any] = field(default_factory=dict)
    quick: dict[str, Any] = field(default_factory=dict)
    #: The secure mode's preset and overrides (None: no secure rows).
    secure_preset: str | None = None
    secure: dict[str, Any] = field(default_factory=dict)
    #: Whether ``--quick`` runs it (CI's minute holds one method's pipeline).
    in_quick: bool = False
    #: The option that names the method's defense (``defense``, or PTF-FedRec's own).
    defense_option: str = "defense"

    def mechanism(self, defense: str) -> dict[str, Any]:
        """The option values a run with ``defense`` has (what its summary line matches)."""
        return {self.defense_option: "none"} if defense == "none" else self.defenses[defense]


TARGETS = (
    # FCF's norm bound: about the median L2 norm of a benign upload on ML-100K in the default
    # run (read from the uploads a runtime observer sees; not a committed measurement).
    Target("fcf", ("ml-100k", "douban"), "rmse", True, {
        "none": {},
        "norm_bound": {"defense": "norm_bound", "defense_bound": 15.0},
        "krum": {"defense": "krum", "defense_f": 10},
        "item_median": {"defense": "item_median"},
        "item_trimmed_mean": {"defense": "item_trimmed_mean", "defense_beta": 0.1},
        "item_trimmed_mean_bounded": {"defense": "item_trimmed_mean", "defense_beta": 0.1,
                                      "defense_bound_rows": True},
    }, common={"eval_every": 50},
        quick={"rounds": 2, "eval_every": 2},
        # The DP preset summed in clear (the same sum, without the masking's cost).
        secure_preset="dp", secure={"dp_masking": False}, in_quick=True),
    # FedGNN on a quarter of its packaged ML-100K schedule (160 of 640 rounds; the packaged
    # config's comment has both figures), evaluated once, at the end.
    Target("fedgnn", ("ml-100k",), "rmse", True, {
        "none": {},
        "krum": {"defense": "krum", "defense_f": 10},
        "item_trimmed_mean": {"defense": "item_trimmed_mean", "defense_beta": 0.1},
    }, common={"rounds": 160, "eval_every": 160}),
    # FedGRec on a third of its packaged ML-100K schedule (100 of 300 rounds), its uploads
    # plain (sparse: the same sum), so that a defense sees each one; evaluated at the end.
    Target("fedgrec", ("ml-100k",), "Recall@20", False, {
        "none": {},
        "krum": {"defense": "krum", "defense_f": 10},
        "item_trimmed_mean": {"defense": "item_trimmed_mean", "defense_beta": 0.1},
    }, common={"rounds": 100, "eval_every": 100, "secure_aggregation": False,
               "plain_upload": "sparse"}),
    # PTF-FedRec's own defense: a per-item trimmed aggregate of the uploaded scores (its
    # server trains on predictions, not summed updates). Exposure: the clients' models.
    Target("ptf-fedrec", ("ml-100k",), "Recall@20", False, {
        "none": {},
        "item_trimmed": {"score_defense": "item_trimmed"},
    }, defense_option="score_defense"),
)
QUICK_ATTACKS = ("crafted",)
#: Each defense in the line a run's summary prints.
DEFENSE_NAMES = {
    "none": "no defense", "norm_bound": "L2-bounded updates", "krum": "multi-Krum",
    "item_median": "per-item median", "item_trimmed_mean": "per-item trimmed mean",
    "item_trimmed_mean_bounded": "per-item trimmed mean of bounded rows",
    "item_trimmed": "per-item trimmed scores",
}
QUICK_DEFENSES = ("none", "item_median")


def _key(*parts: object) -> str:
    return "/".join(str(p) for p in parts)


def plan(seeds: int, quick: bool) -> list[RunSpec]:
    """The grid (module docstring)."""
    specs = []
    seed_list = tuple(range(seeds))
    for t in TARGETS:
        if quick and not t.in_quick:
            continue
        defenses = {k: v for k, v in t.defenses.items() if not quick or k in QUICK_DEFENSES}
        attacks = QUICK_ATTACKS if quick else ATTACKS
        fractions = (DEFENDED_FRACTION,) if quick else FRACTIONS
        common = {**t.common, **(t.quick if quick else {})}
        for ds in t.datasets[:1] if quick else t.datasets:
            rows = [(_key("clean", t.method, ds, d), {"poisoning": "crafted",
                                                      "malicious_fraction": 0.0, **ov})
                    for d, ov in defenses.items()]
            rows += [(_key("attack", t.method, ds, a, f), {**ATTACK_OPTIONS[a],
                                                           "malicious_fraction": f})
                     for a in attacks for f in fractions]
            rows += [(_key("defended", t.method, ds, a, d),
                      {**ATTACK_OPTIONS[a], "malicious_fraction": DEFENDED_FRACTION, **ov})
                     for a in attacks for d, ov in defenses.items() if d != "none"]
            specs += [RunSpec(key, t.method, ds, {**common, **extra}, seed_list)
                      for key, extra in rows]
            if t.secure_preset is not None:
                quick_secure = t.quick if quick else {}
                specs += [RunSpec(_key("secure", t.method, ds, key),
                                  t.method, ds, {**t.secure, **quick_secure, **extra}, seed_list,
                                  preset=t.secure_preset)
                          for key, extra in SECURE_ROWS[: 2 if quick else None]]
    return specs


def final(runs: list[dict[str, Any]], name: str) -> list[float]:
    """``name`` at each seed's last evaluation (missing values dropped)."""
    return [float(r["final"][name]) for r in runs if name in r.get("final", {})]


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def _pct(value: float) -> str:
    return "–" if value != value else f"{100 * value:+.1f}%"


@dataclass(frozen=True)
class DefenseRow:
    """What one defense of a method on a dataset measured: its accuracy cost without attack
    (relative, positive is worse) and the worst ER@10 of the targeted attacks at
    :data:`DEFENDED_FRACTION`, undefended and defended."""

    defense: str
    cost: float
    worst: float
    undefended: float


def defense_rows(t: Target, ds: str, res: dict[str, list[dict[str, Any]]], keys: set[str]
                 ) -> list[DefenseRow]:
    """Every defense of ``t`` on ``ds`` in the grid ``keys`` with its measured cost and
    exposure."""
    base = _mean(final(res.get(_key("clean", t.method, ds, "none"), []), t.metric))

    def worst(runs: list[str]) -> float:
        """The highest ER@10 of the targeted attacks' settings ``runs`` that the grid has; NaN
        while one of them is not measured (a defense is judged on every attack)."""
        values = [_mean(final(res.get(k, []), "ER@10")) for k in runs if k in keys]
        return math.nan if not values or any(v != v for v in values) else max(values)

    undefended = worst([_key("attack", t.method, ds, a, DEFENDED_FRACTION) for a in TARGETED])
    rows = []
    for d in (d for d in t.defenses if _key("clean", t.method, ds, d) in keys):
        clean = _mean(final(res.get(_key("clean", t.method, ds, d), []), t.metric))
        cost = (clean - base) / base if base else math.nan
        rows.append(DefenseRow(d, cost if t.lower_is_better else -cost, undefended if d == "none"
                               else worst([_key("defended", t.method, ds, a, d)
                                           for a in TARGETED]), undefended))
    return rows


def recommended(rows: list[DefenseRow]) -> DefenseRow | None:
    """The most robust defense (lowest worst ER@10) that costs at most :data:`DEFAULT_COST`
    without attack; None before every row is measured."""
    if not rows or any(r.cost != r.cost or r.worst != r.worst for r in rows):
        return None
    fits = [r for r in rows if r.cost <= DEFAULT_COST]
    return min(fits, key=lambda r: (r.worst, r.cost)) if fits else None


def robustness(res: dict[str, list[dict[str, Any]]], keys: set[str]) -> list[dict[str, Any]]:
    """The packaged :data:`~fedrec.configs.measured.ROBUSTNESS_NAME` entries: for each method,
    dataset and defense, the line a run with that defense prints."""
    out = []
    for t in TARGETS:
        for ds in t.datasets:
            if _key("clean", t.method, ds, "none") not in keys:
                continue
            for row in defense_rows(t, ds, res, keys):
                if row.worst != row.worst or row.cost != row.cost:
                    continue
                out.append({
                    "algorithm": t.method, "dataset": ds,
                    "mechanism": t.mechanism(row.defense),
                    "line": (f"{DEFENSE_NAMES[row.defense]}: ER@10 {row.worst:.3f} under "
                             f"{100 * DEFENDED_FRACTION:g}% attackers (undefended "
                             f"{row.undefended:.3f}), {t.metric} {100 * row.cost:+.1f}%"),
                    "command": "fedrec reproduce poisoning"})
    return out


def write_report(out: Path, specs: list[RunSpec], res: dict[str, list[dict[str, Any]]],
                 quick: bool) -> Path:
    lines = ["# Poisoning: malicious clients and defenses (`fedrec reproduce poisoning"
             + (" --quick" if quick else "") + "`)\n",
             "Every figure is the run's last evaluation over the benign users (mean ± sample "
             "std over seeds, count in brackets): the targets' exposure ER@K (the share of "
             "benign users who had not rated a target with it in their top K, averaged over "
             "the targets) and the method's test metric. The attackers' knowledge and "
             "attacks: `fedrec.attacks.poisoning`; the defenses: "
             "`fedrec.federation.aggregation`.\n"]
    if quick:
        lines.append("**Quick mode**: two rounds per run; the numbers test the pipeline, "
                     "not the attacks.\n")
    keys = {s.key for s in specs}
    for t in TARGETS:
        for ds in t.datasets:
            if not any(k.startswith(_key("clean", t.method, ds)) for k in keys):
                continue
            _method_section(lines, out, t, ds, res, keys)
    out.mkdir(parents=True, exist_ok=True)
    write_measured(out, ROBUSTNESS_NAME, json.dumps(robustness(res, keys), indent=1) + "\n",
                   "what each defense measured", quick=quick)
    return finish_report(out, lines, specs)


def _method_section(lines: list[str], out: Path, t: Target, ds: str,
                    res: dict[str, list[dict[str, Any]]], keys: set[str]) -> None:
    m = t.metric
    clean_base = _mean(final(res.get(_key("clean", t.method, ds, "none"), []), m))
    lines.append(f"## {t.method} on {ds}\n")
    rows, curves = [], {}
    for a in ATTACKS:
        for f in FRACTIONS:
            key = _key("attack", t.method, ds, a, f)
            if key not in keys:
                continue
            runs = res.get(key, [])
            rows.append([a, f"{100 * f:g}%", fmt(final(runs, "ER@5")),
                         fmt(final(runs, "ER@10")), fmt(final(runs, m))])
            curves.setdefault(a, []).append((100 * f, _mean(final(runs, "ER@10"))))
    base = res.get(_key("clean", t.method, ds, "none"), [])
    lines.append("### Undefended\n")
    lines.append(f"Without attackers: ER@10 {fmt(final(base, 'ER@10'))}, {m} "
                 f"{fmt(final(base, m))}.\n")
    lines.append(markdown_table(["attack", "malicious", "ER@5", "ER@10", m], rows))

    defenses = [d for d in t.defenses if _key("clean", t.method, ds, d) in keys]
    attacks = [a for a in ATTACKS if _key("attack", t.method, ds, a, DEFENDED_FRACTION) in keys]
    drows, bars = [], {}
    for d in defenses:
        clean = final(res.get(_key("clean", t.method, ds, d), []), m)
        cost = (_mean(clean) - clean_base) / clean_base if clean_base else math.nan
        if not t.lower_is_better:
            cost = -cost
        cells = [d, fmt(clean), _pct(cost)]
        for a in attacks:
            key = (_key("attack", t.method, ds, a, DEFENDED_FRACTION) if d == "none"
                   else _key("defended", t.method, ds, a, d))
            er = final(res.get(key, []), "ER@10")
            cells.append(fmt(er, 3))
            bars.setdefault(a, []).append((d, _mean(er)))
        drows.append(cells)
    lines.append(f"### Defenses at {100 * DEFENDED_FRACTION:g}% attackers\n")
    lines.append(f"Accuracy cost: the {m} without attackers against no defense's "
                 f"({'higher' if t.lower_is_better else 'lower'} is worse). ER@10 per "
                 "attack.\n")
    lines.append(markdown_table(["defense", f"{m} without attack", "accuracy cost",
                                 *(f"ER@10 {a}" for a in attacks)], drows))
    best = recommended(defense_rows(t, ds, res, keys))
    lines.append(
        f"Most robust within {100 * DEFAULT_COST:g}% accuracy (the default issue 40 asks for): "
        + ("not measured yet.\n" if best is None else
           f"**{best.defense}** (worst ER@10 of the targeted attacks {best.worst:.3f}, "
           f"undefended {best.undefended:.3f}).\n"))
    srows = []
    for key, _ in SECURE_ROWS:
        runs = res.get(_key("secure", t.method, ds, key), [])
        if _key("secure", t.method, ds, key) in keys:
            srows.append([key, fmt(final(runs, "ER@10")), fmt(final(runs, m))])
    if srows:
        lines.append(f"### The secure mode (`--preset {t.secure_preset}`)\n")
        lines.append("The server sees only the noised sum: no defense applies, and the bound on "
                     "a client's update is the one its own code applies. `crafted-unclipped`: "
                     "the attackers skip it (at the grid's own attack scale the sum's ring "
                     "overflows and the round aborts; this row's scale fits).\n")
        lines.append(markdown_table(["row", "ER@10", m], srows))
    fig = f"{t.method}-{ds}.png"
    plot(out / fig, [
        lambda ax: ([ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=a)
                     for a, pts in curves.items()], ax.set_xscale("log"),
                    ax.set_xlabel("malicious clients (%)"), ax.set_ylabel("ER@10"),
                    ax.legend()),
        lambda ax: ([ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=a)
                     for a, pts in bars.items()], ax.set_xlabel("defense"),
                    ax.set_ylabel(f"ER@10 at {100 * DEFENDED_FRACTION:g}%"),
                    ax.tick_params(axis="x", rotation=30), ax.legend()),
    ], f"{t.method} on {ds}: item promotion, undefended and defended")
    lines.append(f"![{t.method} on {ds}]({fig})\n")


def reproduce(out: Path, *, quick: bool = False, seeds: int = 1, sweep_seeds: int = 1,
              data_dir: str | Path | None = None, options: RunOptions | None = None,
              run_missing: RunMissing = True) -> Path:
    """Run (or load) the grid and write ``OUT/README.md`` (``sweep_seeds`` is not used)."""
    del sweep_seeds
    specs = plan(1 if quick else seeds, quick)
    res = run_all(specs, out, data_dir=data_dir, options=options, run_missing=run_missing)
    return write_report(out, specs, res, quick)
