"""``fedrec reproduce ptf-fedrec``: PTF-FedRec's tables and figures (Yuan et al., ICDE 2024).

What it runs (``fedrec run`` with the packaged configs plus the overrides in the written tables):

* **Accuracy** (Recall@20 / NDCG@20, mean ± std over ``--seeds`` seeds) on ML-100K and
  Steam-200K: PTF-FedRec's server model and client models, FedAvg over the same NeuMF clients,
  and centralized LightGCN, NGCF and NeuMF on the same per-user split, plus a most-popular
  ranking computed here. ``--gowalla`` adds Gowalla's PTF-FedRec run only (50 min measured on
  2 shared cores; its baselines are not run).
* **Communication**: bytes per client per round from each run's ledger (all steps,
  evaluation included) for PTF-FedRec and FedAvg-NeuMF.
* **Privacy (Table VI's shape, ML-100K)**: the top-guess attack's F1 (mean over rounds) with
  defence none, LDP (Laplace scale ``ldp_scale`` in {0.1, 0.3, 1.0} on the [0, 1] scores),
  sampling, sampling+swapping, each defence's NDCG@20 and ``ΔF1 / ΔNDCG`` against no defence.
* **Ablations (ML-100K)**: dispersal mixed / no-hard / no-confident / random; alpha in
  {10, 30, 50, 100}; sweeps of the beta range, the gamma range and the swap rate lambda
  (Figs. 3-4's shapes): Recall@20, NDCG@20 and attack F1.

Ablations and sweeps use one seed unless ``--sweep-seeds`` says more. ``--quick`` (CI) runs
ML-100K only, one seed, one round per run of 64 sampled clients on 1 local epoch and 1 server
epoch, the first LDP scale and the first two values of each sweep: it tests the pipeline (every
table and plot is written from real runs), not the method, in under a minute on 2 cores. The
privacy table and the sweeps report the server's metrics, so their runs skip the clients'
evaluation (``eval_clients: false``); only the accuracy table evaluates the clients' NeuMF.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedrec.data import load_dataset
from fedrec.data.types import InteractionDataset
from fedrec.errors import DataError
from fedrec.options import RunOptions
from fedrec.reproduce.ranking import most_popular
from fedrec.reproduce.report import finish_report, fmt, markdown_table, mean_std, metric, plot
from fedrec.reproduce.runner import RunMissing, RunSpec, run_all

PUBLISHED_RECALL = {"ml-100k": 0.1623}  # the paper's text (full method); see NOTES.md
METHODS = ("ptf-fedrec", "fedavg-ncf", "lightgcn", "ngcf", "neumf")
DEFENSES = ("none", "ldp", "sampling", "sampling+swapping")
LDP_SCALES = (0.1, 0.3, 1.0)
BIG_DATASETS = ("gowalla",)  # PTF-FedRec's run only: no baselines there
DISPERSALS = ("mixed", "no-hard", "no-confident", "random")
ALPHAS = (10, 30, 50, 100)
BETAS = ((0.1, 0.25), (0.1, 0.5), (0.1, 1.0), (0.5, 1.0))
GAMMAS = ((1.0, 2.0), (1.0, 4.0), (1.0, 8.0))
SWAPS = (0.0, 0.05, 0.1, 0.2, 0.3)
QUICK = {
    "ptf-fedrec": {"rounds": 1, "eval_every": 1, "local_epochs": 1, "server_epochs": 1,
                   "clients_per_round": 64},
    "fedavg-ncf": {"rounds": 1, "eval_every": 1, "local_epochs": 1, "clients_per_round": 64},
    # Centralized baselines: one epoch in large batches (NeuMF's 256 rows per step make ~1,400
    # steps, the graph models' 1,024 triples ~70 full-graph propagations).
    "lightgcn": {"rounds": 1, "eval_every": 1, "batch": 8192},
    "ngcf": {"rounds": 1, "eval_every": 1, "batch": 8192},
    "neumf": {"rounds": 1, "eval_every": 1, "batch": 8192, "num_negatives": 1},
}
#: Only the accuracy table evaluates every client's NeuMF: the privacy table and the sweeps
#: report the server's metrics, and evaluating the 943 client models took 3.5 of a round's 4.1
#: minutes (ML-100K, 2 loaded cores).
SERVER_ONLY = {"eval_clients": False}
QUICK_SWEEP_VALUES = 2  # --quick: the first values of each sweep


def sweep_values(values: tuple[Any, ...], quick: bool) -> tuple[Any, ...]:
    """The values of a sweep that a reproduction runs (--quick: the first few)."""
    return values[:QUICK_SWEEP_VALUES] if quick else values


def methods_of(dataset: str) -> tuple[str, ...]:
    """The methods of ``dataset``'s accuracy table (only PTF-FedRec on the big datasets)."""
    return METHODS[:1] if dataset in BIG_DATASETS else METHODS


def plan(datasets: list[str], seeds: int, sweep_seeds: int, quick: bool) -> list[RunSpec]:
    table, sweep = tuple(range(seeds)), tuple(range(sweep_seeds))

    def ov(method: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        return {**(QUICK.get(method, {}) if quick else {}), **(extra or {})}

    def ml100k(key: str, extra: dict[str, Any]) -> RunSpec:
        """A privacy-table or sweep run: PTF-FedRec on ML-100K."""
        return RunSpec(key, "ptf-fedrec", "ml-100k",
                       ov("ptf-fedrec", {**SERVER_ONLY, **extra}),
                       sweep)

    # ML-100K's table and sweeps first, the other datasets last: a reproduction stopped early
    # (see --report-only) has the most informative part done.
    tables = [RunSpec(f"table/{ds}/{m}", m, ds, ov(m), table) for ds in datasets
              for m in methods_of(ds)]
    specs = [s for s in tables if s.dataset == "ml-100k"]
    specs += [ml100k(f"defense/{key}", extra) for key, _, extra in defense_rows(quick)]
    specs += [ml100k(f"{name}/{label}", {field: value})
              for name, field, _, _, values in SWEEPS
              for label, value in sweep_values(values, quick)]
    return specs + [s for s in tables if s.dataset != "ml-100k"]


def _range(lo: float, hi: float) -> tuple[str, list[float]]:
    return f"{lo}-{hi}", [lo, hi]


#: Each sweep: (folder and figure name, config field, title, axis label, ((point label, value)
#: of each point)).
SWEEPS: tuple[tuple[str, str, str, str, tuple[tuple[str, Any], ...]], ...] = (
    ("dispersal", "dispersal", "Dispersal ablation", "dispersal",
     tuple((d, d) for d in DISPERSALS)),
    ("alpha", "alpha", "Alpha", "alpha", tuple((str(a), a) for a in ALPHAS)),
    ("beta", "beta_range", "Beta range", "beta range", tuple(_range(*b) for b in BETAS)),
    ("gamma", "gamma_range", "Gamma range", "gamma range", tuple(_range(*g) for g in GAMMAS)),
    ("swap", "swap_rate", "Swap rate lambda", "lambda", tuple((str(s), s) for s in SWAPS)),
)


def defense_rows(quick: bool = False) -> list[tuple[str, str, dict[str, Any]]]:
    """(key, label, overrides) of each row of the privacy table (--quick: one LDP scale)."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for d in DEFENSES:
        if d == "ldp":
            out += [(f"ldp-{s}", f"ldp (scale {s})", {"defense": d, "ldp_scale": s})
                    for s in (LDP_SCALES[:1] if quick else LDP_SCALES)]
        else:
            out.append((d, d, {"defense": d}))
    return out


def attack_f1(runs: list[dict[str, Any]]) -> list[float]:
    """Per seed: the top-guess F1 averaged over the run's rounds (train statistics)."""
    out = []
    for r in runs:
        vals = [h["train"]["attack_f1"] for h in r["history"] if "attack_f1" in h["train"]]
        if vals:
            out.append(float(np.mean(vals)))
    return out


TIME_SPLIT = ("time_clients_s", "time_server_s", "time_dispersal_s")


def time_split(run: dict[str, Any]) -> dict[str, float]:
    """Mean seconds per round of client training, server training and dispersal (NaN for a
    run made before the split was recorded)."""
    return {k: float(np.mean([h["train"][k] for h in run["history"] if k in h["train"]]))
            if any(k in h["train"] for h in run["history"]) else float("nan")
            for k in TIME_SPLIT}


def bytes_per_client_round(run: dict[str, Any]) -> float:
    """All bytes of the run (both directions, every step) / rounds / clients."""
    clients = run["final"].get("client_eval_clients") or run["final"].get("eval_clients")
    total = run["communication"]["totals"]["bytes_total"]
    return total / run["config"]["rounds"] / max(float(clients or 1), 1.0)


def popularity(ds: InteractionDataset, split_overrides: dict[str, Any]) -> dict[str, float]:
    """Most-popular ranking on PTF-FedRec's split (the floor every model must beat)."""
    from fedrec.algorithms.methods.ptf_fedrec import PTFFedRecConfig
    from fedrec.config import build_config

    cfg = build_config(PTFFedRecConfig, "ptf-fedrec", ds.name, overrides=split_overrides)
    return most_popular(ds, cfg)


def _row(runs: list[dict[str, Any]], prefix: str = "") -> list[str]:
    return [fmt(metric(runs, f"{prefix}Recall@20")), fmt(metric(runs, f"{prefix}NDCG@20"))]


def write_report(out: Path, specs: list[RunSpec], res: dict[str, list[dict[str, Any]]],
                 datasets: list[str], data_dir: str | Path | None, quick: bool) -> Path:
    lines = ["# PTF-FedRec reproduction (`fedrec reproduce ptf-fedrec"
             + (" --quick" if quick else "") + "`)\n",
             "Numbers are read from the runs' `results.json` under `runs/` (mean ± sample std "
             "over seeds, count in brackets); *published* marks the paper's figure.\n"]
    if quick:
        lines.append("**Quick mode**: 2 rounds per run; the numbers test the pipeline, not the "
                     "method.\n")
    rows = []
    for ds in datasets:
        name = "ptf-fedrec"
        ptf = res.get(f"table/{ds}/{name}", [])
        rows.append([ds, "PTF-FedRec server (NGCF)", *_row(ptf),
                     f"{PUBLISHED_RECALL[ds]:.4f}" if ds in PUBLISHED_RECALL else "–"])
        rows.append([ds, "PTF-FedRec clients (NeuMF)", *_row(ptf, "client_"), "–"])
        for m in methods_of(ds)[1:]:
            label = "FedAvg-NeuMF (clients)" if m == "fedavg-ncf" else f"centralized {m}"
            rows.append([ds, label, *_row(res.get(f"table/{ds}/{m}", [])), "–"])
        pop = popularity(load_dataset(ds, data_dir), {})
        rows.append([ds, "most popular (computed here)", f"{pop['Recall@20']:.4f}",
                     f"{pop['NDCG@20']:.4f}", "–"])
    lines.append("## Accuracy\n")
    lines.append(markdown_table(["dataset", "model", "Recall@20", "NDCG@20",
                                 "published Recall@20"], rows))

    comm = []
    for ds in (d for d in datasets if "fedavg-ncf" in methods_of(d)):
        b = {m: mean_std([bytes_per_client_round(r) for r in res.get(f"table/{ds}/{m}", [])])[0]
             for m in ("ptf-fedrec", "fedavg-ncf")}
        ratio = b["fedavg-ncf"] / b["ptf-fedrec"]
        comm.append([ds, *(f"{v:,.0f}" if v == v else "–" for v in b.values()),  # NaN: not run
                     f"{ratio:.0f}x" if ratio == ratio else "–"])
    lines.append("## Communication (bytes per client per round, ledger, evaluation included)\n")
    lines.append(markdown_table(["dataset", "PTF-FedRec", "FedAvg-NeuMF", "ratio"], comm))

    perf = []
    for ds in datasets:
        for r in res.get(f"table/{ds}/ptf-fedrec", []):
            split = time_split(r)
            peak = r.get("peak_rss_mib")
            perf.append([ds, str(r["seed"]), f"{r['wall_time_s']:.0f}",
                         *(f"{split[k]:.2f}" for k in split),
                         f"{peak:,.0f}" if peak else "–"])
    lines.append("## Performance (wall time of the whole run, evaluation included; mean per "
                 "round)\n")
    lines.append(markdown_table(["dataset", "seed", "run wall s", "clients s/round",
                                 "server s/round", "dispersal s/round", "peak RSS MiB"], perf))

    base = res.get("defense/none", [])
    f0, n0 = mean_std(attack_f1(base))[0], mean_std(metric(base, "NDCG@20"))[0]
    prows = []
    for key, label, _ in defense_rows(quick):
        runs = res.get(f"defense/{key}", [])
        f1, ndcg = mean_std(attack_f1(runs))[0], mean_std(metric(runs, "NDCG@20"))[0]
        ratio = (f0 - f1) / (n0 - ndcg) if key != "none" and n0 != ndcg else float("nan")
        prows.append([label, fmt(attack_f1(runs)), fmt(metric(runs, "NDCG@20")),
                      "–" if key == "none" else f"{ratio:.2f}"])
    lines.append("## Privacy: top-guess attack (ML-100K; Table VI's shape)\n")
    lines.append(markdown_table(["defence", "attack F1", "NDCG@20 (server)",
                                 "ΔF1 / ΔNDCG vs none"], prows))
    lines.append("ΔF1/ΔNDCG: privacy gained per unit of accuracy lost (larger is better; "
                 "negative ΔNDCG, i.e. a defence that also improves NDCG, gives a negative "
                 "ratio).\n")

    def sweep(title: str, prefix: str, keys: list[str], label: str, fig: str) -> None:
        srows, pts = [], []
        for k in keys:
            runs = res.get(f"{prefix}/{k}", [])
            srows.append([k, *_row(runs), fmt(attack_f1(runs))])
            pts.append((k, mean_std(metric(runs, "Recall@20"))[0],
                        mean_std(attack_f1(runs))[0]))
        lines.append(f"## {title} (ML-100K)\n")
        lines.append(markdown_table([label, "Recall@20", "NDCG@20", "attack F1"], srows))
        lines.append(f"![{prefix}]({fig})\n")
        plot(out / fig, [
            lambda ax: (ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-"),
                        ax.set_xlabel(label), ax.set_ylabel("Recall@20 (server)")),
            lambda ax: (ax.plot([p[0] for p in pts], [p[2] for p in pts], "o-"),
                        ax.set_xlabel(label), ax.set_ylabel("top-guess F1")),
        ], f"PTF-FedRec, {title}")

    for name, _, title, axis, values in SWEEPS:
        sweep(title, name, [k for k, _ in sweep_values(values, quick)], axis, f"{name}.png")

    return finish_report(out, lines, specs)


def reproduce(out: Path, *, quick: bool = False, seeds: int = 3, sweep_seeds: int = 1,
              data_dir: str | Path | None = None, options: RunOptions | None = None,
              gowalla: bool = False, run_missing: RunMissing = True) -> Path:
    names = ["ml-100k"] if quick else ["ml-100k", "steam-200k"] + (["gowalla"] if gowalla else [])
    datasets = []
    for name in names:
        try:
            load_dataset(name, data_dir, download=False)
        except DataError:
            if name == "ml-100k":
                raise
            continue
        datasets.append(name)
    if quick:
        seeds = 1
    specs = plan(datasets, seeds, sweep_seeds, quick)
    res = run_all(specs, out, data_dir=data_dir, options=options,
                  run_missing=run_missing)
    return write_report(out, specs, res, datasets, data_dir, quick)
