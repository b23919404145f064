"""The privacy page per method and mode (``results/privacy/modes.md``, written by ``fedrec
reproduce privacy`` with its report; issue 38 item 4): for every method of the grid
(:data:`fedrec.reproduce.privacy.TARGETS`) and each of its modes (no mechanism, the paper's own
mechanism, the DP mechanism against the server, the DP mechanism with a trusted server), the
threat it answers, the unit it protects, the epsilon against the server and against whoever
sees only the released model, the test metric, the audited lower bound and the attacks
measured on it.

Every figure is read from results: the grid's runs (``results/privacy/runs``), its audits
(``audits.json``) and the differencing attacks on released sums
(``results/privacy-attacks/<case>.json``, ``bench/bench_aggregate_attacks.py``); the text says
only what each mode is. Nothing here is typed in by hand: a mode without a run shows ``–``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedrec.reproduce.privacy_rows import committed_runs, measured_attack
from fedrec.reproduce.report import markdown_table, metric

Runs = dict[str, list[dict[str, Any]]]

#: The threat each kind of mode answers (what the adversary holds), in the page's words.
THREATS = {
    "none": "a server that keeps every message of the run (nothing bounds what it learns)",
    "paper": "as the paper states it; no user-level bound over the run",
    "distributed": "an honest-but-curious server that keeps every message of the run and knows "
                   "who took part in each round; it decodes only sums carrying the clients' noise",
    "central": "anyone who sees only the released models; the server is trusted (it adds the "
               "noise and sees each client's clipped update)",
    "local": "an honest-but-curious server that keeps every upload of every client and knows "
             "who uploaded when; the noise is the client's, on each upload",
}

#: Methods with a DP mode that is not in the grid, and why (docs/<method>.md has its runs).
NOT_IN_GRID = {
    "feras": "its node-level mode (`embedding_dp: node`) protects one node's attribute row in "
             "the uploaded projections but not the weights, so it has no user-level row",
}

#: The epsilon at which a mode's row is quoted on this page (the table of every epsilon is in
#: README.md beside it).
QUOTED_EPSILON = 8.0


def attack_cases(folder: Path) -> list[dict[str, Any]]:
    """The differencing attacks' results (``bench/bench_aggregate_attacks.py``), each a case
    with its algorithm, options, attack kind and F1 per round; none where the folder is absent."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def _case_line(case: dict[str, Any]) -> str:
    last = case["rows"][-1]
    opts = " ".join(f"{k}={v}" for k, v in case["options"].items()
                    if k not in ("dim", "rounds", "seed", "clients_per_round"))
    return (f"with `{opts}`: the {case['attack']} attack on the released sums, F1 "
            f"{last['attack_f1']:.3f} (chance {last['chance_f1']:.3f}) after {last['round']} "
            f"rounds (`{case['case']}`)")


def _mode_attacks(method: str, dp: str | None, cases: list[dict[str, Any]],
                  runs: list[dict[str, Any]], attack_f1: Callable[[list[dict[str, Any]]], str]
                  ) -> str:
    """The attacks measured on a mode: the run's own (its privacy report), then each
    differencing case of ``method`` whose ``dp`` option is ``dp`` (None: cases without DP)."""
    found = []
    leakage = (runs[0].get("privacy") or {}).get("leakage") if runs and dp is None else None
    if leakage:  # what crosses in clear, as the run's own report states it
        found.append(f"in clear: {leakage}")
    own = attack_f1(runs)
    if own != "–":
        name = str((measured_attack(runs[0]) or {}).get("measured_attack", "")).split(" ")[0]
        found.append(f"{name} F1 {own} (the run's own)")
    found += [_case_line(c) for c in cases
              if c["algorithm"] == method and c["options"].get("dp") == dp]
    return "; ".join(found) or "none measured"


@dataclass(frozen=True)
class RowReaders:
    """The grid report's own readers of a row's runs (:mod:`fedrec.reproduce.privacy`), so
    that this page and README.md say the same: its epsilons (server, released model, noise
    multiplier), its audited bound and the attack F1 its run measured."""

    epsilons: Callable[[list[dict[str, Any]]], tuple[str, str, str]]
    audit: Callable[[list[dict[str, Any]]], str]
    attack_f1: Callable[[list[dict[str, Any]]], str]


def _row(target: Any, mode: str, options: str, threat: str, runs: list[dict[str, Any]],
         dp: str | None, cases: list[dict[str, Any]], read: RowReaders) -> list[str]:
    server, released, _ = read.epsilons(runs)
    eps = (runs[0].get("privacy") or {}).get("epsilon") if runs else None
    if threat == "paper" and eps is not None:  # the paper's own (local) accounting
        server, released = f"{eps:.3g} (the paper's accounting)", "–"
    values = metric(runs, target.metric)
    return [mode, options, THREATS[threat], server, released,
            f"{sum(values) / len(values):.4f}" if values else "–", read.audit(runs),
            _mode_attacks(target.method, dp, cases, runs, read.attack_f1)]


def write_modes(targets: Sequence[Any], epsilons: Sequence[float], res: Runs, attacks: Path,
                read: RowReaders) -> str:
    """The page's markdown for the grid's ``targets`` (:class:`fedrec.reproduce.privacy.Target`)
    at ``epsilons``, from its runs by key (``res``) and the differencing attacks' folder
    (``attacks``)."""
    cases = attack_cases(attacks)
    lines = ["# Privacy per method and mode", "",
             "Made by `fedrec reproduce privacy` (`fedrec.reproduce.privacy_modes`) from the "
             "runs of the grid in this folder ([README.md](README.md): every epsilon, every "
             "dataset, the commands) and the differencing attacks on released sums in "
             "`results/privacy-attacks/`. User level, delta 1e-5. Each DP mode is quoted at "
             f"epsilon {QUOTED_EPSILON:g} on the method's first dataset, with its settings "
             "chosen on validation; 'audited': the one-run audit's lower bound on the row's "
             "release mechanism (README.md says how). '–': not run.", ""]
    span = f"epsilon {min(epsilons):g}-{max(epsilons):g}"
    for t in targets:
        dataset = t.datasets[0]
        key = f"dp/{t.method}/{dataset}/"
        none = " ".join(f"{k}={v}" for k, v in t.no_privacy.items())
        rows = [_row(t, "no mechanism", f"`{none}`", "none", res.get(key + "none", []), None,
                     cases, read)]
        if t.paper_runs:
            rows.append(_row(t, "the paper's mechanism",
                             f"the settings of `{t.paper_runs.format(dataset=dataset)}`", "paper",
                             committed_runs([t.paper_runs], dataset), "__paper__", cases, read))
        elif t.paper_mechanism is not None:
            opts = " ".join(f"{k}={v}" for k, v in t.paper_mechanism.items())
            rows.append(_row(t, "the paper's mechanism", f"`{opts}`", "paper",
                             res.get(key + "paper-mechanism", []), "__paper__", cases, read))
        mech = " ".join(f"{k}={v}" for k, v in t.mechanism.items())
        quoted = res.get(key + f"eps-{QUOTED_EPSILON:g}", [])
        if t.aggregate:
            rows += [
                _row(t, f"DP against the server ({span})",
                     f"`{mech} target_epsilon={QUOTED_EPSILON:g}`", "distributed", quoted,
                     "distributed", cases, read),
                _row(t, "DP against the released model (trusted server)",
                     f"`dp=central {t.noise_option}=2`", "central",
                     res.get(key + "central-z2", []), "central", cases, read)]
        else:
            rows.append(_row(t, f"DP against the server, local ({span})",
                             f"`{mech} target_epsilon={QUOTED_EPSILON:g}`", "local", quoted,
                             "__local__", cases, read))
        lines += [f"## {t.method} ({dataset})", "", f"Protected unit: {t.unit}.", "",
                  markdown_table(["mode", "options", "threat", "epsilon (server)",
                                  "epsilon (released model)", f"test {t.metric}", "audited",
                                  "measured attacks"], rows)]
    lines += [f"## {m}\n\nNot in the grid: {why} (docs/{m}.md).\n"
              for m, why in NOT_IN_GRID.items()]
    return "\n".join(lines)
