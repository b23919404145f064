"""``fedrec reproduce fl-mv-dssm``: FL-MV-DSSM's tables and Fig. 2 (Huang et al., arXiv
2008.10808; issue 16 item 10), on ML-100K.

What it runs (``fedrec run`` with the packaged configs plus the overrides in the written tables;
Precision/Recall/NDCG@10 and AUC, mean ± std over ``--seeds`` seeds, each at its round chosen on
validation):

* **Table II (cold start)**: FL-MV-DSSM with ``cold_start`` users, items and users-items (10% held
  out, noise off), each beside FED-MVMF on the same scenario (a new user's factor from its
  views, a new item's from its features: :mod:`fedrec.algorithms.methods.fed_mvmf`) and a
  most-popular
  ranking of the same held-out rows, computed here (the fallback a recommender without
  features would use; a cold item has no training count, so it ranks last there).
* **Table III (variants)**: FL-MV-DSSM, SEMI-FL-MV-DSSM (``aggregate_user_sub_model: false``)
  and FL-DSSM on each single view (``views: [demographics]``, ``views: [svd]``), each with the
  paper's Gaussian mechanism (sigma 1) and with the noise off; centralized DSSM per view
  (:class:`fedrec.algorithms.methods.fl_mv_dssm.baseline.CentralDSSM`, not a ``fedrec run``
  algorithm:
  trained here, ``CENTRAL_EPOCHS`` epochs, the epoch chosen on validation Recall@10); FCF
  (``fcf`` with ``implicit: per-user``, ``topk: 10``), whose split is the per-user 80/20 one, not
  FL-MV-DSSM's random 80/20 of all positives, so its row ranks other test rows; FED-MVMF
  (``fed-mvmf``: FL-MV-DSSM's split, both user views as its user side information, the item
  features as its item side information, federated evaluation like FL-MV-DSSM's devices) and
  FED-MVMF without side information (``user_view_weight: 0``, ``item_view_weight: 0``: FCF's
  confidence-weighted ALS on FL-MV-DSSM's own split, the row that compares with FCF on the
  same test rows); and the most-popular ranking of FL-MV-DSSM's split.
* **Fig. 2**: Precision@10 and Recall@10 per evaluated round (``history``) of FL-MV-DSSM, SEMI and
  both FL-DSSMs (noise off), and centralized DSSM per epoch (same axes, epochs for rounds).
* **Privacy**: the malicious-view attack
  (:func:`fedrec.algorithms.methods.fl_mv_dssm.attack.attack_table_rows`, as
  ``bench/fl_mv_dssm_attack_table.py``) for each sigma, next to the epsilon each run reports.

Neither the centralized DSSM nor the attack is a run of the grid: ``--only`` names them by the
prefixes ``central/`` (``central/<view>``) and ``attack``; both are cached in ``OUT``
(``central/``, ``attack.json``) and reported from there by any later report.

Every federated run uses ``secure_aggregation: false``: the plain sum of the same fixed-point
uploads gives the same model (tested), and the secure sum costs minutes a round.
``--quick`` (CI) runs one seed, one round of 8 devices per run, each run evaluated on a seeded
sample of :data:`QUICK_EVAL_DEVICES` devices (``eval_devices``; the full reproduction evaluates
every device), the noise-off variants only (and the defaults), the centralized DSSM's first 8
steps of 1,024 positives (:data:`QUICK_CENTRAL`), one FCF round, one FED-MVMF round of 32
clients each (evaluated on the same sample size; the cold-start ones too) and the attack at
sigma 0 and 1 with 4 devices: it tests the pipeline, not the method. Every run and report
figure of one process shares one multi-view build of the split
(:func:`fedrec.algorithms.methods.fl_mv_dssm.reuse_multiviews`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from fedrec.core.files import write_atomic, writing
from fedrec.data import load_dataset
from fedrec.data.types import Dataset
from fedrec.options import RunOptions
from fedrec.reproduce.report import finish_report, fmt, markdown_table, metric, plot
from fedrec.reproduce.runner import RunMissing, RunSpec, may_run, run_all

DATASET = "ml-100k"
METRICS = ("Precision@10", "Recall@10", "NDCG@10", "AUC")
COLD_STARTS = ("users", "items", "users-items")
NOISE_OFF = {"noise_multiplier": 0.0}
#: Every FL-MV-DSSM run and model here is FL-MV-DSSM's ``paper`` preset (the paper's server lr),
#: its rows' options set over it.
PRESET = "paper"
PLAIN = {"secure_aggregation": False}
#: (key, label, overrides) of each FL-MV-DSSM variant.
VARIANTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("fl-mv-dssm", "FL-MV-DSSM", {}),
    ("semi", "SEMI-FL-MV-DSSM", {"aggregate_user_sub_model": False}),
    ("fl-dssm-demographics", "FL-DSSM (demographics)", {"views": ["demographics"]}),
    ("fl-dssm-svd", "FL-DSSM (svd)", {"views": ["svd"]}),
)
VIEWS = ("demographics", "svd")
FCF = {"implicit": "per-user", "topk": 10}
#: (key, label, overrides) of the FED-MVMF rows: with its side information, and without (FCF's
#: model on FL-MV-DSSM's split).
MVMF_ROWS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("fed-mvmf", "FED-MVMF (FL-MV-DSSM's split; both user views, item features)", {}),
    ("fed-mvmf-no-side", "FED-MVMF without side information (FCF's model on FL-MV-DSSM's "
                         "split)", {"user_view_weight": 0.0, "item_view_weight": 0.0}),
)
CENTRAL_EPOCHS = 10
ATTACK_SIGMAS = (0.0, 1.0, 4.0)
ATTACK_DEVICES = 10
#: --quick: devices evaluated per run (of ML-100K's 943), a sample drawn from the run's seed.
QUICK_EVAL_DEVICES = 50
QUICK = {"rounds": 1, "eval_every": 1, "clients_per_round": 8,
         "eval_devices": QUICK_EVAL_DEVICES}
QUICK_FCF = {"rounds": 1, "eval_every": 1, "clients_per_round": 32}
QUICK_MVMF = {**QUICK_FCF, "eval_devices": QUICK_EVAL_DEVICES}
#: --quick: the centralized DSSM's one epoch cut to its first 8 steps of 1,024 positives.
QUICK_CENTRAL = {"epochs": 1, "batch": 1024, "max_steps": 8}
QUICK_ATTACK = {"sigmas": (0.0, 1.0), "devices": 4}


def variant_rows(quick: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """(key, label, overrides) of Table III's federated rows (--quick: noise off, and the
    defaults of FL-MV-DSSM)."""
    rows = [(f"{key}/sigma-1", f"{label}, sigma 1", ov) for key, label, ov in VARIANTS]
    off = [(f"{key}/noise-off", f"{label}, noise off", {**ov, **NOISE_OFF})
           for key, label, ov in VARIANTS]
    return [rows[0], *off] if quick else [*rows, *off]


def plan(seeds: int, quick: bool) -> list[RunSpec]:
    s = tuple(range(seeds))
    fast = QUICK if quick else {}
    specs = [RunSpec(f"cold/{c}", "fl-mv-dssm", DATASET,
                     {**fast, **PLAIN, **NOISE_OFF, "cold_start": c}, s, preset=PRESET)
             for c in COLD_STARTS]
    specs += [RunSpec(f"cold/fed-mvmf/{c}", "fed-mvmf", DATASET,
                      {**(QUICK_MVMF if quick else {}), "cold_start": c}, s)
              for c in COLD_STARTS]
    specs += [RunSpec(f"variant/{key}", "fl-mv-dssm", DATASET, {**fast, **PLAIN, **ov}, s,
                      preset=PRESET) for key, _, ov in variant_rows(quick)]
    specs.append(RunSpec("variant/fcf", "fcf", DATASET, {**(QUICK_FCF if quick else {}), **FCF},
                         s))
    specs += [RunSpec(f"variant/{key}", "fed-mvmf", DATASET,
                      {**(QUICK_MVMF if quick else {}), **ov}, s) for key, _, ov in MVMF_ROWS]
    return specs


def _config(overrides: dict[str, Any]) -> Any:
    from fedrec.algorithms import resolve_config

    return resolve_config("fl-mv-dssm", DATASET, overrides=overrides, preset=PRESET)


def _multiview(overrides: dict[str, Any], ds: Dataset) -> Any:
    from fedrec.algorithms.methods.fl_mv_dssm import multiview_of

    return multiview_of(_config(overrides), ds)


def most_popular(overrides: dict[str, Any], ds: Dataset) -> dict[str, float]:
    """Most-popular ranking of the split ``overrides`` make (computed here, not a run)."""
    from fedrec.algorithms.methods.fl_mv_dssm.baseline import most_popular_metrics

    return most_popular_metrics(_multiview(overrides, ds), 10)


def _cached(path: Path, options: dict[str, Any]) -> dict[str, Any] | None:
    """The result stored at ``path`` if it was made with ``options``, else None."""
    if not path.is_file():
        return None
    stored = json.loads(path.read_text())
    return stored if stored.get("options") == options else None  # type: ignore[no-any-return]


def central_dssm(out: Path, view: str, seed: int, quick: bool, ds: Dataset,
                 train: bool = True) -> dict[str, Any] | None:
    """Centralized DSSM on ``view`` (trained here; cached in ``OUT/central/``): each epoch's
    validation and test metrics and the test metrics at the best validation Recall@10.
    ``train=False``: only the cached result (None if there is none)."""
    from fedrec.algorithms.methods.fl_mv_dssm.baseline import CentralDSSM

    opts = QUICK_CENTRAL if quick else {"epochs": CENTRAL_EPOCHS, "batch": None,
                                        "max_steps": None}
    path = out / "central" / f"{view}-seed-{seed}.json"
    if (stored := _cached(path, opts)) is not None:
        return stored
    if not train:
        return None
    # The split does not depend on the run's seed (split_seed does): one multi-view build.
    model = CentralDSSM(_config({"seed": seed}), _multiview({}, ds), view,
                        batch=opts["batch"])
    history = []
    for epoch in range(1, int(opts["epochs"]) + 1):
        loss = model.fit_epoch(opts["max_steps"])
        history.append({"round": epoch, "loss": loss, "valid": model.evaluate("valid"),
                        "eval": model.evaluate("test")})
    best = max(history, key=lambda h: (h["valid"].get("Recall@10", 0.0), -h["round"]))
    res = {"options": opts, "view": view, "seed": seed, "history": history,
           "selected_epoch": best["round"], "test": best["eval"]}
    with writing("a central run's results", path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(res, indent=1), "a central run's results")
    return res


def _cells(runs: list[dict[str, Any]]) -> list[str]:
    return [fmt(metric(runs, m)) for m in METRICS]


def _epsilon(runs: list[dict[str, Any]]) -> str:
    eps = [r["privacy"].get("epsilon_item_updates") for r in runs if r.get("privacy")]
    vals = [float(e) for e in eps if e is not None]
    return fmt(vals, 2) if vals else "none (no noise)"


def _popular_cells(pop: dict[str, float]) -> list[str]:
    return [f"{pop[m]:.4f}" if m in pop else "–" for m in METRICS]


def _curve(runs: list[dict[str, Any]], name: str, key: str = "eval") -> tuple[list[int],
                                                                               list[float]]:
    """Mean of ``name`` over seeds at each evaluated round."""
    by_round: dict[int, list[float]] = {}
    for r in runs:
        for h in r.get("history", []):
            if name in h.get(key, {}):
                by_round.setdefault(int(h["round"]), []).append(float(h[key][name]))
    rounds = sorted(by_round)
    return rounds, [float(np.mean(by_round[x])) for x in rounds]


def write_report(out: Path, specs: list[RunSpec], res: dict[str, list[dict[str, Any]]],
                 central: dict[str, list[dict[str, Any]]], attack: list[dict[str, Any]],
                 ds: Dataset, quick: bool) -> Path:
    from fedrec.algorithms.methods.fl_mv_dssm.attack import attack_table_markdown

    head = ["model", *METRICS]
    lines = ["# FL-MV-DSSM reproduction (`fedrec reproduce fl-mv-dssm"
             + (" --quick" if quick else "") + "`)\n",
             "ML-100K, FL-MV-DSSM's random 80/20 split (seed 0). Numbers are read from the runs' "
             "`results.json` under `runs/` (mean ± sample std over seeds, count in brackets); "
             "*computed here* marks figures this report computes itself. The paper's tables "
             "lost their digits: no published figure is shown.\n"]
    if quick:
        lines.append(f"**Quick mode**: one round of 8 devices per run, each run evaluated on "
                     f"a seeded sample of {QUICK_EVAL_DEVICES} of the {ds.num_users} devices "
                     f"(`eval_devices`; the full reproduction evaluates every device), the "
                     f"centralized DSSM trained for {QUICK_CENTRAL['max_steps']} steps of "
                     f"{QUICK_CENTRAL['batch']:,} positives; the numbers test the pipeline, not "
                     f"the method.\n")
    rows = []
    for c in COLD_STARTS:
        spec = next(s for s in specs if s.key == f"cold/{c}")
        rows.append([f"FL-MV-DSSM, cold {c} (noise off)", *_cells(res.get(spec.key, []))])
        rows.append([f"FED-MVMF, cold {c} (new users' factors from their views, new items' from "
                     "their features)", *_cells(res.get(f"cold/fed-mvmf/{c}", []))])
        pop = most_popular({"cold_start": c}, ds)
        rows.append([f"most popular, cold {c} (fallback, computed here)", *_popular_cells(pop)])
    lines.append("## Table II: cold start (10% of users / items held out of training)\n")
    lines.append(markdown_table(head, rows))

    rows = [[label, *_cells(res.get(f"variant/{key}", [])),
             _epsilon(res.get(f"variant/{key}", []))] for key, label, _ in variant_rows(quick)]
    for view in VIEWS:
        runs = central.get(view, [])
        rows.append([f"centralized DSSM ({view}; computed here, epoch on validation)",
                     *[fmt([float(r["test"][m]) for r in runs if m in r["test"]])
                       for m in METRICS], "none (no privacy)"])
    rows.append(["FCF (implicit per-user: per-user 80/20 split, other test rows)",
                 *_cells(res.get("variant/fcf", [])), "none"])
    rows += [[label, *_cells(res.get(f"variant/{key}", [])), "none"]
             for key, label, _ in MVMF_ROWS]
    rows.append(["most popular (computed here)", *_popular_cells(most_popular({}, ds)),
                 "–"])
    lines.append("## Table III: variants and baselines\n")
    lines.append(markdown_table([*head, "epsilon (item updates)"], rows))

    curves = [(label, res.get(f"variant/{key}/noise-off", [])) for key, label, _ in VARIANTS]

    def panel(name: str) -> Any:
        def draw(ax: Any) -> None:
            for label, runs in curves:
                ax.plot(*_curve(runs, name), "o-", label=label)
            for view in VIEWS:
                ax.plot(*_curve(central.get(view, []), name), "s--",
                        label=f"centralized DSSM ({view}), per epoch")
            ax.set_xlabel("round (centralized: epoch)")
            ax.set_ylabel(f"{name} (test)")
            ax.legend(fontsize=7)
        return draw

    plot(out / "fig2.png", [panel("Precision@10"), panel("Recall@10")],
         "FL-MV-DSSM variants (noise off), Fig. 2's shape")
    lines.append("## Fig. 2: precision and recall per round (noise off)\n")
    lines.append("![fig2](fig2.png)\n")

    lines.append(f"## Privacy: the malicious view (view demographics reads the svd view's item "
                 f"update; {attack[0]['rounds'] if attack else 1} round(s), plain sum)\n")
    lines.append(attack_table_markdown(attack) if attack
                 else "not run (`--report-only` runs nothing; `--only attack` runs it)\n")

    return finish_report(out, lines, specs)


def reproduce(out: Path, *, quick: bool = False, seeds: int = 3, sweep_seeds: int = 1,
              data_dir: str | Path | None = None, options: RunOptions | None = None,
              run_missing: RunMissing = True) -> Path:
    from fedrec.algorithms.methods.fl_mv_dssm import reuse_multiviews

    if quick:
        seeds = 1
    specs = plan(seeds, quick)
    ds = load_dataset(DATASET, data_dir)
    with reuse_multiviews():  # one build of the split for every run and figure
        res = run_all(specs, out, data_dir=data_dir, options=options,
                      run_missing=run_missing)
        central = {view: [r for seed in range(seeds)
                          if (r := central_dssm(out, view, seed, quick, ds,
                                                may_run(f"central/{view}", run_missing)))]
                   for view in VIEWS}
        attack = attack_rows(out, quick, ds, may_run("attack", run_missing))
        return write_report(out, specs, res, central, attack, ds, quick)


def attack_rows(out: Path, quick: bool, ds: Dataset, run: bool = True) -> list[dict[str, Any]]:
    """The malicious-view table's rows (cached in ``OUT/attack.json``, as the centralized
    results are, so that a later report made without running it keeps it); ``run=False``:
    only the cached rows (none if there are none)."""
    from fedrec.algorithms.methods.fl_mv_dssm.attack import attack_table_rows

    opts = json.loads(json.dumps(QUICK_ATTACK if quick else
                                 {"sigmas": ATTACK_SIGMAS, "devices": ATTACK_DEVICES}))
    path = out / "attack.json"
    if (stored := _cached(path, opts)) is not None:
        return stored["rows"]  # type: ignore[no-any-return]
    if not run:
        return []
    rows = attack_table_rows(_multiview({}, ds), _config, opts["sigmas"], opts["devices"])
    with writing("the attack's results", out):
        out.mkdir(parents=True, exist_ok=True)
    # (per-device arrays as lists; the table reads the scalars)
    write_atomic(path, json.dumps({"options": opts, "rows": rows},
                                  default=lambda v: v.tolist()), "the attack's results")
    return rows

