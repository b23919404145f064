"""``fedrec reproduce fedgnn``: FedGNN's Table 3 and Figs. 4-6 (Wu et al., KDD 2021) with our runs.

What it runs (``fedrec run`` with the packaged per-dataset configs plus the overrides shown in
the written tables):

* **Table 3** (RMSE, mean ± std over ``--seeds`` seeds) on every rating dataset staged in the
  data directory: centralized PMF, the same GNN trained centrally (``gnn-central``), FCF, FedMF
  (Paillier) and FedGNN with the paper's privacy settings (δ 0.1, λ 0.2, M 1000), next to the
  published FedGNN and GC-MC numbers (facts from the papers, labelled "published").
* **Fig. 4** (variants, ML-100K): FedGNN as configured, without graph expansion, with trainable
  (refreshed) neighbours, and with GCN and GGNN instead of GAT.
* **Fig. 5** (ML-100K): δ in {0.05, 0.1, 0.2} x λ in {0.05, 0.1, 0.2, 0.5}: RMSE, the
  epsilon of one whole upload ``2δd/λ`` and the paper's per-coordinate figure ``2δ/λ`` (which
  does not bound what a client releases) from each run's privacy report.
* **Fig. 6** (ML-100K): M in {0, 100, 500, 1000, 2000}: RMSE and bytes per round of the
  ``train`` step from the ledger.

Chosen on validation (never on test), before the table and sweeps run: the server settings
every dataset's FedGNN shares (:data:`LADDER`, on ML-100K at the sweep schedule) and ML-100K's
Table 3 schedule (:func:`schedules`); each candidate runs once (seed 0) and the lowest
validation RMSE at its own validation-chosen round wins. Every run also chooses its reported
round on validation (``results.json["selection"]``): the gnn-central baseline trains
:data:`CENTRAL_BUDGET` epochs and reports the test RMSE of its best validation epoch, and every
table figure is the test metric at that run's chosen round.

Sweeps use one seed (seed 0) unless ``--sweep-seeds`` asks for more, and the 160-round
schedule (:data:`SWEEP_SCHEDULE`; a run takes ~40 s on one core) rather than ML-100K's longer
Table 3 schedule. ``--quick`` (for CI) runs ML-100K only, a handful of rounds per run, one seed
and the first two points of each of Figs. 4-6 (:data:`QUICK_SWEEP_POINTS`): its numbers show the
pipeline works, not the method's accuracy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedrec.algorithms import ALGORITHMS
from fedrec.data import load_dataset
from fedrec.errors import DataError
from fedrec.options import RunOptions
from fedrec.privacy.report import per_coordinate_epsilon, per_upload_epsilon, run_epsilon
from fedrec.reproduce.report import (
    best_test_metric,
    finish_report,
    fmt,
    markdown_table,
    mean_std,
    metric,
    plot,
    selected_rounds,
    train_bytes_per_round,
)
from fedrec.reproduce.runner import (
    Candidates,
    Choice,
    RunMissing,
    RunSpec,
    choose_on_validation,
    run_all,
)

# Published RMSE (Wu et al. 2021, Table 3; GC-MC: van den Berg et al. 2017), see
# shared/papers/NOTES.md. YahooMusic has no published FedGNN figure.
PUBLISHED_FEDGNN = {"flixster": 0.980, "douban": 0.775, "ml-100k": 0.910, "ml-1m": 0.839,
                    "ml-10m": 0.793}
PUBLISHED_GCMC = {"flixster": 0.917, "douban": 0.734, "yahoo_music": 20.5, "ml-100k": 0.910,
                  "ml-1m": 0.832, "ml-10m": 0.777}
DATASETS = ("ml-100k", "douban", "flixster", "yahoo_music", "ml-1m", "ml-10m")
METHODS = ("pmf", "gnn-central", "fcf", "fedmf", "fedgnn")
PRIVACY = {"clip": 0.1, "laplace": 0.2, "pseudo_items": 1000}
VARIANTS = {
    "FedGNN (GAT)": {},
    "no expansion": {"neighbours": 0},
    # The paper's "fully trainable" neighbours: updated in each iteration, from the start.
    "trainable neighbours": {"trainable_neighbours": True, "expand_after": 0},
    "GCN": {"gnn": "gcn"},
    # GAT's tuned client step on the user embedding (lr_user 0.5 on the summed loss) makes
    # GGNN's training loss explode from round 2 (1.5e3 -> 5e5 -> NaN by round 53, measured);
    # 0.1 keeps it stable.
    "GGNN (lr_user 0.1)": {"gnn": "ggnn", "lr_user": 0.1},
}
FEDMF_BUDGET = {"rounds": 2, "key_bits": 1024}
DELTAS = (0.05, 0.1, 0.2)
LAMBDAS = (0.05, 0.1, 0.2, 0.5)
MS = (0, 100, 500, 1000, 2000)
# The sweeps' schedule on ML-100K: 160 rounds (20 epochs), the schedule of the other datasets,
# instead of ML-100K's longer one, so that the 22 settings of Figs. 4-6 cost a quarter of the
# time. They compare settings with one another; Table 3 has the schedule chosen on validation.
SWEEP_SCHEDULE = {"rounds": 160, "eval_every": 8, "init_std": 0.1}
# The server-side settings shared by every dataset's packaged FedGNN config (configs/fedgnn.yaml,
# the "tuned" section), each step of the ladder they were built by, chosen on ML-100K's
# validation RMSE at the sweep schedule (first listed wins a tie).
LADDER = {
    "lr 0.2, decay 0.92": {"bias": True, "item_avg": "uploaders", "lr": 0.2, "lr_decay": 0.92},
    "lr 0.1": {"bias": False, "item_avg": "cohort", "lr": 0.1, "lr_decay": 1.0},
    "+ bias": {"bias": True, "item_avg": "cohort", "lr": 0.1, "lr_decay": 1.0},
    "+ item_avg uploaders": {"bias": True, "item_avg": "uploaders", "lr": 0.1, "lr_decay": 1.0},
    "lr 0.2 constant": {"bias": True, "item_avg": "uploaders", "lr": 0.2, "lr_decay": 1.0},
    "lr 0.2, decay 0.85": {"bias": True, "item_avg": "uploaders", "lr": 0.2, "lr_decay": 0.85},
}
# The centralized baselines' epochs: the budget the packaged epoch counts were read from, every
# epoch evaluated, the epoch chosen on validation.
CENTRAL_BUDGET = {"rounds": 40, "eval_every": 1}

# --quick: a few rounds per run (ML-100K: 8 FedGNN rounds of 128 clients = one epoch).
QUICK = {
    "pmf": {"rounds": 2},
    "gnn-central": {"rounds": 1, "dim": 16},
    "fcf": {"rounds": 4},
    # FedMF encrypts the whole item table per client: 2 clients of 4 dimensions keep it to ~9 s.
    "fedmf": {"rounds": 1, "clients_per_round": 2, "key_bits": 512, "dim": 4},
    "fedgnn": {"rounds": 3, "eval_every": 3, "expand_after": 0, "clients_per_round": 64},
}
QUICK_LADDER = {"packaged": {}, "lr 0.1": {"lr": 0.1}}
QUICK_SWEEP_POINTS = 2  # --quick: the first points of each of Figs. 4-6


def variants(quick: bool) -> dict[str, dict[str, Any]]:
    """Fig. 4's variants that a reproduction runs (--quick: the first few)."""
    return dict(list(VARIANTS.items())[:QUICK_SWEEP_POINTS] if quick else VARIANTS.items())


def delta_lambdas(quick: bool) -> list[tuple[float, float]]:
    """Fig. 5's (clip, Laplace scale) points (--quick: the first few)."""
    points = [(d, lam) for d in DELTAS for lam in LAMBDAS]
    return points[:QUICK_SWEEP_POINTS] if quick else points


def pseudo_item_counts(quick: bool) -> tuple[int, ...]:
    """Fig. 6's numbers of pseudo items M (--quick: the first few)."""
    return MS[:QUICK_SWEEP_POINTS] if quick else MS


def schedules(ladder: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """ML-100K's candidate schedules for Table 3 on top of the chosen ladder step: the sweeps'
    160 rounds, and 640 rounds with the per-epoch decay stretched to the same total decay
    (``decay^(1/4)``), at two initialisations. Each is evaluated every 4 epochs or less, so its
    own run also chooses a round on validation."""
    decay = float(ladder.get("lr_decay", 1.0))
    long = {"rounds": 640, "eval_every": 32, "lr_decay": round(decay ** 0.25, 3)}
    return {"160 rounds": {**ladder, **SWEEP_SCHEDULE},
            "640 rounds, init 0.05": {**ladder, **long, "init_std": 0.05},
            "640 rounds, init 0.1": {**ladder, **long, "init_std": 0.1}}


def staged(datasets: tuple[str, ...], data_dir: str | Path | None) -> list[str]:
    """The datasets whose files are present (nothing is downloaded here)."""
    out = []
    for name in datasets:
        try:
            load_dataset(name, data_dir, download=False)
        except DataError:
            continue
        out.append(name)
    return out


def _overrides(method: str, quick: bool, extra: dict[str, Any] | None = None
               ) -> dict[str, Any]:
    base = dict(QUICK.get(method, {})) if quick else {}
    if method == "fedgnn":
        base.update(PRIVACY)
    elif method == "gnn-central" and not quick:
        base.update(CENTRAL_BUDGET)
    base.update(extra or {})
    return base


def ladder_candidates(quick: bool) -> Candidates:
    """The shared server-side settings, chosen on ML-100K's validation at the sweep schedule."""
    steps = QUICK_LADDER if quick else LADDER
    return Candidates("ladder/ml-100k/fedgnn", "fedgnn", "ml-100k", {
        label: _overrides("fedgnn", quick, extra if quick else {**SWEEP_SCHEDULE, **extra})
        for label, extra in steps.items()})


def schedule_candidates(ladder: dict[str, Any], seeds: int, quick: bool) -> Candidates:
    """ML-100K's Table 3 schedule, chosen on validation; its seeds make the table's cell."""
    options = ({"quick": _overrides("fedgnn", True, ladder)} if quick else
               {label: _overrides("fedgnn", False, extra)
                for label, extra in schedules(ladder).items()})
    return Candidates("table/ml-100k/fedgnn", "fedgnn", "ml-100k", options,
                      tuple(range(seeds)))


def ladder_of(choice: Choice, quick: bool) -> dict[str, Any]:
    """The chosen ladder step's server settings alone (without the sweep schedule)."""
    return dict((QUICK_LADDER if quick else LADDER)[choice.label])


def plan(datasets: list[str], seeds: int, sweep_seeds: int, quick: bool,
         ladder: dict[str, Any] | None = None, ml100k_fedgnn: RunSpec | None = None
         ) -> list[RunSpec]:
    """Every run of the reproduction, given the choices made on validation: ``ladder`` (the
    shared server settings, every dataset's FedGNN and the sweeps) and ``ml100k_fedgnn`` (the
    ML-100K Table 3 cell with its chosen schedule). Without them, the packaged settings."""
    ladder = dict(ladder or {})
    table_seeds = tuple(range(seeds))
    sweep = tuple(range(sweep_seeds))

    def ov(method: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        return _overrides(method, quick, {**(ladder if method == "fedgnn" else {}),
                                          **(extra or {})})

    def sweep_ov(extra: dict[str, Any]) -> dict[str, Any]:
        return ov("fedgnn", extra if quick else {**SWEEP_SCHEDULE, **extra})

    # ML-100K's table and sweeps first, then the other datasets: a reproduction stopped early
    # (see --report-only) has the most informative part done.
    table = [RunSpec(f"table/{ds}/{m}", m, ds, ov(m), table_seeds)
             for ds in datasets for m in METHODS if m in ALGORITHMS and m != "fedmf"]
    if ml100k_fedgnn is not None:
        table = [ml100k_fedgnn if s.key == ml100k_fedgnn.key else s for s in table]
    specs = [s for s in table if s.dataset == "ml-100k"]
    # FedMF encrypts the whole item table for every client: ~11 CPU-minutes per round at its
    # defaults on ML-100K, so the table shows its cost on ML-100K at a budget, not converged.
    specs.append(RunSpec("table/ml-100k/fedmf", "fedmf", "ml-100k",
                         ov("fedmf") if quick else FEDMF_BUDGET, (0,)))
    specs += [RunSpec(f"fig4/{name}", "fedgnn", "ml-100k", sweep_ov(extra), sweep)
              for name, extra in variants(quick).items()]
    specs += [RunSpec(f"fig5/delta-{d}/lambda-{lam}", "fedgnn", "ml-100k",
                      sweep_ov({"clip": d, "laplace": lam}), sweep)
              for d, lam in delta_lambdas(quick)]
    specs += [RunSpec(f"fig6/M-{m}", "fedgnn", "ml-100k", sweep_ov({"pseudo_items": m}), sweep)
              for m in pseudo_item_counts(quick)]
    return specs + [s for s in table if s.dataset != "ml-100k"]


def _rmse(runs: list[dict[str, Any]]) -> float:
    return mean_std(metric(runs, "rmse"))[0]


def write_report(out: Path, specs: list[RunSpec], res: dict[str, list[dict[str, Any]]],
                 datasets: list[str], quick: bool, choices: list[Choice]) -> Path:
    trials = [t for c in choices for t in c.trials]
    by_key = {s.key: s for s in [*trials, *specs]}
    lines = ["# FedGNN reproduction (`fedrec reproduce fedgnn" + (" --quick" if quick else "")
             + "`)\n",
             "Every number below is read from the runs' `results.json` under `runs/` (mean ± "
             "sample std over seeds, count in brackets); columns marked *published* are the "
             "papers' figures. Each run's command is `fedrec run ALGORITHM --dataset DATASET` "
             "with the packaged per-dataset config and the overrides listed at the end. "
             "Every figure is the test metric at the round the run chose on its validation "
             "split (10% of each user's training ratings, `results.json[\"selection\"]`); "
             "the settings chosen between runs were chosen on validation RMSE too (section "
             "*Chosen on validation*). Test metrics are never read to choose.\n"]
    if quick:
        lines.append("**Quick mode**: a few rounds per run; the numbers test the pipeline, "
                     "not the method.\n")

    # Table 3
    rows = []
    for ds in datasets:
        cells = [ds]
        for m in METHODS:
            key = f"table/{ds}/{m}"
            cells.append(fmt(metric(res.get(key, []), "rmse")) if key in res else "–")
        fed = _rmse(res.get(f"table/{ds}/fedgnn", []))
        pub, gcmc = PUBLISHED_FEDGNN.get(ds), PUBLISHED_GCMC.get(ds)
        done = fed == fed  # NaN until a FedGNN run of the dataset has finished
        cells += [f"{pub:.3f}" if pub else "–", f"{gcmc:.3f}" if gcmc else "–",
                  f"{fed - pub:+.3f}" if pub and done else "–",
                  f"{fed - gcmc:+.3f}" if gcmc and done else "–"]
        eps = [run_epsilon(r.get("privacy"))[0] for r in res.get(f"table/{ds}/fedgnn", [])]
        cells.append(f"{eps[0]:.3g}" if eps and eps[0] is not None else "–")
        cells += [selected_rounds(res.get(f"table/{ds}/{m}", []))
                  for m in ("gnn-central", "fedgnn")]
        rows.append(cells)
    lines.append("## Table 3: RMSE\n")
    lines.append(markdown_table(
        ["dataset", *METHODS, "FedGNN published", "GC-MC published", "ours - FedGNN pub.",
         "ours - GC-MC pub.", "FedGNN ε (whole run, per client)",
         "gnn-central epoch (validation)", "FedGNN round (validation)"], rows))
    optimism = []
    for ds in datasets:
        cells = [ds]
        for m in METHODS:
            runs = res.get(f"table/{ds}/{m}", [])
            val, best = mean_std(metric(runs, "rmse"))[0], mean_std(
                best_test_metric(runs, "rmse", False))[0]
            cells.append(f"{best:.4f} ({best - val:+.4f})" if runs and best == best else "–")
        optimism.append(cells)
    lines.append("What reading the test set would have reported instead: each run's best test "
                 "RMSE over its evaluated rounds (mean over seeds), and in brackets its "
                 "difference from the validation-chosen figure above. Not results: the "
                 "optimism of choosing on test.\n")
    lines.append(markdown_table(["dataset", *METHODS], optimism))
    lines.append(f"FedMF (Paillier) runs on ML-100K only, one seed, with {FEDMF_BUDGET}: "
                 "each round encrypts the item table for every selected client (see "
                 "`fedrec.algorithms.methods.fedmf`); its RMSE is that of a barely trained "
                 "model and "
                 "shows the cost of encrypted aggregation, not FedMF's accuracy.\n")
    lines.append("FedGNN runs use δ (clip) 0.1, λ (Laplace) 0.2, M 1000 pseudo items; ε is "
                 "the local DP of the gradient values a client uploads: one whole upload of d "
                 "coordinates is 2δd/λ (d the largest upload of the run), composed over the "
                 "uploads of the client that took part most (basic composition, seed 0). It "
                 "bounds nothing at these sizes; the paper's 2δ/λ = 1 per upload coordinate "
                 "does not bound what a client releases. The uploaded item ids have no formal "
                 "guarantee (pseudo items).\n")

    if not quick:
        lines.append("Figs. 4-6 run on ML-100K with the 160-round schedule of the other datasets "
                     f"({SWEEP_SCHEDULE}, with the server settings chosen on validation) instead "
                     "of ML-100K's Table 3 schedule: they compare settings with one another at a "
                     "quarter of the cost; Table 3 has the schedule chosen on validation.\n")

    # Fig 4
    names = list(variants(quick))
    vals4 = [_rmse(res.get(f"fig4/{n}", [])) for n in names]
    lines.append("## Fig. 4: variants (ML-100K)\n")
    lines.append(markdown_table(["variant", "RMSE"], [[n, fmt(metric(res.get(f"fig4/{n}", []),
                                                                        "rmse"))]
                                                       for n in names]))
    lines.append("![variants](fig4_variants.png)\n")
    def bars(ax):
        ax.bar(range(len(names)), vals4)
        ax.set_xticks(range(len(names)), names, rotation=20, fontsize=8)
        ax.set_ylabel("RMSE")
        done = [v for v in vals4 if v == v]  # runs not done yet are NaN
        if done:
            ax.set_ylim(min(done) - 0.02, max(done) + 0.01)

    plot(out / "fig4_variants.png", [bars], "FedGNN variants, ML-100K")

    # Fig 5
    rows5, series = [], {}
    for d, lam in delta_lambdas(quick):
        runs = res.get(f"fig5/delta-{d}/lambda-{lam}", [])
        eps = per_coordinate_epsilon(runs[0]["privacy"]) if runs else None
        vec = per_upload_epsilon(runs[0]["privacy"]) if runs else None
        rows5.append([f"{d}", f"{lam}", f"{vec:.3g}" if vec else "–",
                      f"{eps:.2f}" if eps else "–", fmt(metric(runs, "rmse"))])
        series.setdefault(d, []).append((lam, _rmse(runs), vec))
    lines.append("## Fig. 5: clipping δ and Laplace λ (ML-100K, M 1000)\n")
    lines.append(markdown_table(["δ", "λ", "ε per upload (whole vector)",
                                 "ε per upload coordinate (secondary)", "RMSE"], rows5))
    lines.append("![delta/lambda](fig5_delta_lambda.png)\n")

    def rmse_panel(ax):
        for d, pts in series.items():
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"δ={d}")
        ax.set_xlabel("λ (Laplace scale)")
        ax.set_ylabel("RMSE")
        ax.legend()

    def eps_panel(ax):
        for d, pts in series.items():
            ax.plot([p[0] for p in pts], [p[2] or float("nan") for p in pts], "o-",
                    label=f"δ={d}")
        ax.set_xlabel("λ (Laplace scale)")
        ax.set_ylabel("ε per upload (whole vector)")
        ax.set_yscale("log")
        ax.legend()

    plot(out / "fig5_delta_lambda.png", [rmse_panel, eps_panel], "FedGNN LDP, ML-100K")

    # Fig 6
    rows6, pts6 = [], []
    for m in pseudo_item_counts(quick):
        runs = res.get(f"fig6/M-{m}", [])
        b = mean_std([train_bytes_per_round(r) for r in runs])[0]
        rows6.append([str(m), fmt(metric(runs, "rmse")), f"{b / 2**20:,.1f}"])
        pts6.append((m, _rmse(runs), b / 2**20))
    lines.append("## Fig. 6: pseudo items M (ML-100K, δ 0.1, λ 0.2)\n")
    lines.append(markdown_table(["M", "RMSE", "MiB per round (train step, up + down)"],
                                rows6))
    lines.append("![pseudo items](fig6_pseudo_items.png)\n")
    plot(out / "fig6_pseudo_items.png", [
        lambda ax: (ax.plot([p[0] for p in pts6], [p[1] for p in pts6], "o-"),
                    ax.set_xlabel("M"), ax.set_ylabel("RMSE")),
        lambda ax: (ax.plot([p[0] for p in pts6], [p[2] for p in pts6], "o-"),
                    ax.set_xlabel("M"), ax.set_ylabel("MiB per round")),
    ], "FedGNN pseudo items, ML-100K")

    lines.append("## Chosen on validation\n")
    for c in choices:
        lines.append(f"`{c.spec.key}`: chosen **{c.label}**" + (
            f" on {c.select_on} (seed {c.trials[0].seeds[0]}, each candidate at the round its "
            "own run chose on validation)." if c.select_on else " (no trial finished yet: "
            "the first candidate stands in).") + "\n")
        lines.append(markdown_table(
            ["candidate", "overrides", c.select_on or "validation", "test RMSE (not read)"],
            [[label, ", ".join(f"{k}={v}" for k, v in t.overrides.items()
                               if k not in PRIVACY), f"{v:.4f}" if v is not None else "–",
              fmt(metric(res.get(t.key, []), "rmse"))]
             for (label, v), t in zip(c.validation.items(), c.trials, strict=True)]))

    return finish_report(out, lines, by_key.values())


def reproduce(out: Path, *, quick: bool = False, seeds: int = 3, sweep_seeds: int = 1,
              data_dir: str | Path | None = None, options: RunOptions | None = None,
              run_missing: RunMissing = True) -> Path:
    datasets = ["ml-100k"] if quick else staged(DATASETS, data_dir)
    if "ml-100k" not in datasets:
        raise DataError("fedrec reproduce fedgnn needs ML-100K (its sweeps run on it)")
    if quick:
        seeds = 1
    kw: dict[str, Any] = dict(data_dir=data_dir, options=options,
                              run_missing=run_missing)
    # Two choices on ML-100K's validation RMSE, in order: the shared server settings, then
    # ML-100K's schedule on top of them. Every later run uses what they chose.
    ladder = choose_on_validation(ladder_candidates(quick), out, **kw)
    schedule = choose_on_validation(
        schedule_candidates(ladder_of(ladder, quick), seeds, quick), out, ladder.trials, **kw)
    specs = plan(datasets, seeds, sweep_seeds, quick, ladder_of(ladder, quick), schedule.spec)
    # The trials first: a table cell whose config equals a trial's reuses that run.
    res = run_all(ladder.trials + schedule.trials + specs, out, **kw)
    return write_report(out, specs, res, datasets, quick, [ladder, schedule])
