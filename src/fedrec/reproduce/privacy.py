"""``fedrec reproduce privacy``: the accuracy every method with a user-level DP mechanism keeps
at a given epsilon against the server (issues 36 and 38): FCF and FedGNN on rating data, FedGRec
on ranking data, FL-MV-DSSM and FED-MVMF on ML-100K's views (the DP aggregate), PTF-FedRec with
its own upload mechanism (:data:`TARGETS`). Feras's node-level mechanism covers its embedding
uploads but not its weights (docs/feras.md), so it has no user-level row here.

What it runs, per method and each of its datasets (``--quick``: its first dataset only, two
rounds), each run at its round chosen on validation (RMSE for rating, Recall@K for ranking):

* ``dp/<method>/<dataset>/eps-E``: ``dp: distributed`` with ``target_epsilon: E`` for E in
  :data:`EPSILONS` (the server-side epsilon, delta 1e-5, solved before training over the run's
  planned Poisson cohorts; :mod:`fedrec.federation.dp_sum`);
* ``.../no-noise``: the same clipped aggregate without noise (``dp: central``,
  ``noise_multiplier: 0``): what clipping alone costs;
* ``.../none``: the same model and schedule with no privacy mechanism at all;
* ``.../paper-mechanism``: the paper's own mechanism, where it is a setting of the same run
  (FL-MV-DSSM's sigma 1 between views, PTF-FedRec's sampling and swapping);
* on ML-100K, ``.../central-z2`` and ``.../distributed-z2``: both mechanisms at noise multiplier
  2, the trusted-aggregator reference the distributed one must match in accuracy.

The DP settings of each method are chosen on its first dataset's validation metric at epsilon
10 among its candidates (one run each, seed 0, under ``OUT/runs/tune/``; the report lists every
candidate's figure) and used unchanged on every dataset and epsilon. That choice spends privacy
too and is not accounted: each row's epsilon is that of its own run, the tuning runs' releases
are not composed into it; ``--quick`` takes each
method's first candidate without tuning. Every run samples every client in every round
(``clients_per_round: 0``, Poisson rate 1: sampling brings no amplification against the
server, and the fewest rounds per participation give the least noise at a given server-side
epsilon), sizes the noise for all
survivors (``secagg_threshold: 1``; no dropouts are simulated) and sums the noised vectors
without masking (``dp_masking: false``): the masked sum decodes to the same ring sum bit for bit
(``tests/federation/test_dp_sum.py``), so the model and the server-side epsilon
(``epsilon_server_rdp``, what the masked run reports as ``epsilon``) are those of the masked
run, without its cost.

The paper mechanism's rows (FedGNN's pseudo items and LDP, its packaged settings) are the
existing runs under ``results/fedgnn-<dataset>/``, reported when present with the epsilon they
print; they are not re-run here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedrec.config import presets
from fedrec.configs.measured import PRIVATE_MODES_NAME
from fedrec.core.files import write_atomic
from fedrec.options import RunOptions
from fedrec.reproduce.privacy_modes import RowReaders, write_modes
from fedrec.reproduce.privacy_rows import (
    AUDIT_CANARIES,
    AUDITS_NAME,
    attack_f1,
    audit_row,
    committed_runs,
    privacy_figures,
)
from fedrec.reproduce.report import (
    finish_report,
    format_bytes,
    markdown_table,
    metric,
    plot,
    train_bytes_per_round,
    write_measured,
)
from fedrec.reproduce.runner import (
    Candidates,
    Choice,
    RunMissing,
    RunSpec,
    choose_on_validation,
    run_all,
)

EPSILONS = (1.0, 2.0, 4.0, 8.0, 16.0)
COMMON = {"dp_masking": False, "secagg_threshold": 1.0, "clients_per_round": 0, "dp_delta": 1e-5}
TUNE_EPSILON = 10.0
_GNN = {"dim": 8, "loss_reduction": "mean", "lr_decay": 1.0, "dp_clip": 1.0}
_GREC_DP = {"rounds": 10, "eval_every": 2, "num_layers": 1, "dim": 8, "dp_latent": "none",
            "dp_degree": 48, "server_lr": 10.0}
_DSSM = {"noise_multiplier": 0.0, "secure_aggregation": False, "rounds": 50, "eval_every": 10,
         "eval_devices": 500}


@dataclass(frozen=True)
class Target:
    """One method in the grid: its datasets (the first is where its DP settings are chosen,
    at epsilon :data:`TUNE_EPSILON`), the test metric its table reports, the candidate DP
    settings (label: overrides, in order of preference on a tie), what "no privacy mechanism"
    means for it, and its --quick overrides."""

    method: str
    datasets: tuple[str, ...]
    metric: str
    candidates: dict[str, dict[str, Any]]
    no_privacy: dict[str, Any]
    quick: dict[str, Any] = field(default_factory=dict)
    #: Where the paper mechanism's own runs are (``{dataset}`` filled in), if anywhere.
    paper_runs: str | None = None
    #: The paper's own mechanism run here (over the DP settings), if it is not in paper_runs.
    paper_mechanism: dict[str, Any] | None = None
    #: The DP aggregate's noise multiplier option (FL-MV-DSSM's own is the paper's sigma).
    noise_option: str = "noise_multiplier"
    #: The options that turn the method's formal mechanism on (the DP aggregate's, or a
    #: method's own local one: PTF-FedRec's upload_dp); the "no-noise" and trusted-server
    #: reference rows exist only for the DP aggregate.
    mechanism: dict[str, Any] = field(default_factory=lambda: {"dp": "distributed"})
    in_quick: bool = True  # False: even two rounds take minutes (every client every round)
    #: Where the DP-tuned settings differ from the method's defaults in more than the schedule
    #: (FedGRec's DP settings are dim 8, one layer, no latent tables): the defaults without any
    #: mechanism on the grid's schedule (these overrides over the defaults), the row
    #: ``defaults``. A private mode must keep its accuracy against the better of it and
    #: ``none`` (issue 38: "the same method without noise").
    defaults_row: dict[str, Any] | None = None
    #: Committed runs of the method without noise at its own (paper's) settings, by folder
    #: (``{dataset}`` filled in; those that exist count): the same reference where the grid
    #: cannot afford the method's schedule (FedGNN's 160-640 rounds).
    reference_runs: tuple[str, ...] = ()
    #: What one neighbouring run changes (user-level: one party's whole data), for the page.
    unit: str = "one user: all its ratings, in every round it takes part in"

    @property
    def aggregate(self) -> bool:
        return "dp" in self.mechanism

    @property
    def higher_is_better(self) -> bool:
        return self.metric != "rmse"


_RATING = ("ml-100k", "douban", "flixster")
_QUICK = {"rounds": 2, "eval_every": 1, "clients_per_round": 100, "dim": 4}
TARGETS: tuple[Target, ...] = (
    Target("fcf", _RATING, "rmse", {
        "d8-r50-c0.1-lr0.02": {"dim": 8, "rounds": 50, "eval_every": 5, "dp_clip": 0.1,
                               "lr": 0.02},
        "d8-r80-c0.1-lr0.02": {"dim": 8, "rounds": 80, "eval_every": 10, "dp_clip": 0.1,
                               "lr": 0.02},
        "d8-r50-c0.1-lr0.05": {"dim": 8, "rounds": 50, "eval_every": 5, "dp_clip": 0.1,
                               "lr": 0.05},
        "d8-r50-c0.3-lr0.02": {"dim": 8, "rounds": 50, "eval_every": 5, "dp_clip": 0.3,
                               "lr": 0.02},
        "d16-r50-c0.1-lr0.02": {"dim": 16, "rounds": 50, "eval_every": 5, "dp_clip": 0.1,
                                "lr": 0.02},
        "d32-r50-c0.1-lr0.02": {"rounds": 50, "eval_every": 5, "dp_clip": 0.1, "lr": 0.02},
        "d32-r30-c0.1-lr0.05": {"rounds": 30, "eval_every": 5, "dp_clip": 0.1, "lr": 0.05},
    }, {"dp": "none"}, _QUICK, reference_runs=("results/fcf-{dataset}",)),
    Target("fedgnn", _RATING, "rmse", {
        "r20-lr20-lm0.2": {**_GNN, "rounds": 20, "eval_every": 4, "lr": 20.0, "lr_model": 0.2},
        "r20-lr10-lm0.2": {**_GNN, "rounds": 20, "eval_every": 4, "lr": 10.0, "lr_model": 0.2},
        "r20-lr40-lm0.2": {**_GNN, "rounds": 20, "eval_every": 4, "lr": 40.0, "lr_model": 0.2},
        "r20-lr20-lm0.5": {**_GNN, "rounds": 20, "eval_every": 4, "lr": 20.0, "lr_model": 0.5},
        "r10-lr20-lm0.2": {**_GNN, "rounds": 10, "eval_every": 2, "lr": 20.0, "lr_model": 0.2},
        "r40-lr10-lm0.1": {**_GNN, "rounds": 40, "eval_every": 5, "lr": 10.0, "lr_model": 0.1},
        "r20-lr20-lm0.2-nobias": {**_GNN, "rounds": 20, "eval_every": 4, "lr": 20.0,
                                  "lr_model": 0.2, "bias": False},
    }, {"dp": "none", "laplace": 0.0, "clip": 0.0, "pseudo_items": 0, "neighbours": 0,
        "item_avg": "cohort"}, _QUICK, paper_runs="results/fedgnn-{dataset}",
        reference_runs=("results/fedgnn-{dataset}-clip-only",
                        "results/fedgnn-{dataset}-clip-only-640")),
    # Ranking: ML-100K's per-user split (where the settings are chosen), then the large
    # populations user-level DP needs (issue 38: Gowalla, Yelp2018, Steam).
    Target("fedgrec", ("ml-100k", "steam-200k", "gowalla"), "Recall@20", {
        # FedGRec's `dp` preset (fedrec/configs/fedgrec.yaml: the item-update block only),
        # then two clip budgets around it.
        "preset-dp": {**_GREC_DP, "dp_clip": 5.0},
        "clip-2": {**_GREC_DP, "dp_clip": 2.0},
        "clip-10": {**_GREC_DP, "dp_clip": 10.0},
    }, {"dp": "none", "secure_aggregation": False},
        {"rounds": 2, "eval_every": 1, "clients_per_round": 100, "dim": 4, "num_layers": 1,
         "user_fit_steps": 2, "user_fit_train_steps": 2},
        defaults_row={"rounds": 10, "eval_every": 2, "clients_per_round": 0,
                      "secure_aggregation": False},
        unit="one user: all its interactions, in every round it takes part in"),
    # The device is the unit (all its views). The DP rows replace the paper's view-level sigma
    # (its own row, paper-mechanism); the unmasked DP sum requires secure_aggregation off.
    Target("fl-mv-dssm", ("ml-100k",), "Recall@10", {
        "c1": {**_DSSM, "dp_clip": 1.0},
        "c0.3": {**_DSSM, "dp_clip": 0.3},
        "c3": {**_DSSM, "dp_clip": 3.0},
    }, {"dp": "none"}, {"rounds": 2, "eval_every": 1, "clients_per_round": 100,
                        "eval_devices": 50},
        paper_mechanism={"dp": "none", "noise_multiplier": 1.0},
        noise_option="dp_noise_multiplier",
        unit="one device: all its views' data, in every round it takes part in"),
    # PTF-FedRec's own mechanism: Gaussian scores on a public random item sample per upload,
    # composed over a client's uploads (ptf_fedrec.upload_dp); its defence is then off.
    Target("ptf-fedrec", ("ml-100k",), "Recall@20", {
        "m100": {"upload_items": 100},
        "m30": {"upload_items": 30},
    }, {"upload_dp": "none", "defense": "none"},
        mechanism={"upload_dp": "gaussian", "defense": "none"},
        paper_mechanism={"upload_dp": "none"}, in_quick=False,
        unit="one client: all its interactions, through every upload of scores it makes"),
    Target("fed-mvmf", ("ml-100k",), "Recall@10", {
        "c1": {"dp_clip": 1.0, "rounds": 50, "eval_every": 10},
        "c5": {"dp_clip": 5.0, "rounds": 50, "eval_every": 10},
        "c20": {"dp_clip": 20.0, "rounds": 50, "eval_every": 10},
    }, {"dp": "none"}, {"rounds": 2, "eval_every": 1, "clients_per_round": 100,
                        "eval_devices": 50},
        unit="one device: all its views' data, in every round it takes part in"),
)
METHODS = tuple(t.method for t in TARGETS)
TARGET = {t.method: t for t in TARGETS}


def candidates(target: Target) -> Candidates:
    """The tuning trials of a method: each candidate at epsilon 10 on its first dataset."""
    return Candidates(target.method, target.method, target.datasets[0], {
        label: {**_common(target), **opts, **target.mechanism, "target_epsilon": TUNE_EPSILON}
        for label, opts in target.candidates.items()})


def _common(target: Target) -> dict[str, Any]:
    """The DP aggregate's settings every run of the grid shares (none for a local mechanism)."""
    return COMMON if target.aggregate else {}


def plan(seeds: int, quick: bool, chosen: dict[str, dict[str, Any]] | None = None
         ) -> list[RunSpec]:
    """The grid, each method at its ``chosen`` settings (default: its first candidate)."""
    chosen = chosen or {}
    specs = []
    for t in TARGETS:
        if quick and not t.in_quick:
            continue
        setting = chosen.get(t.method, next(iter(t.candidates.values())))
        for dataset in t.datasets[:1] if quick else t.datasets:
            base = {**_common(t), **setting, **(t.quick if quick else {})}
            rows: list[tuple[str, dict[str, Any]]] = [
                (f"eps-{e:g}", {**t.mechanism, "target_epsilon": e})
                for e in (EPSILONS[::4] if quick else EPSILONS)]
            z = t.noise_option
            if t.aggregate:
                rows.append(("no-noise", {"dp": "central", z: 0.0}))
            rows.append(("none", t.no_privacy))
            if t.paper_mechanism is not None:
                rows.append(("paper-mechanism", t.paper_mechanism))
            if dataset == "ml-100k" and not quick and t.aggregate:
                rows += [("distributed-z2", {"dp": "distributed", z: 2.0}),
                         ("central-z2", {"dp": "central", z: 2.0})]
            specs += [RunSpec(f"dp/{t.method}/{dataset}/{name}", t.method, dataset,
                              {**base, **extra}, tuple(range(seeds)))
                      for name, extra in rows]
            if t.defaults_row is not None and not quick:
                specs.append(RunSpec(f"dp/{t.method}/{dataset}/defaults", t.method, dataset,
                                     {**t.no_privacy, **t.defaults_row}, tuple(range(seeds))))
    return specs


def reproduce(out: Path, *, quick: bool = False, seeds: int = 1, sweep_seeds: int = 1,
              data_dir: str | Path | None = None, options: RunOptions | None = None,
              run_missing: RunMissing = True) -> Path:
    """Run (or load) the grid and write ``OUT/README.md``. One seed unless ``--seeds`` says
    more (``sweep_seeds`` is not used)."""
    kwargs: dict[str, Any] = {"data_dir": data_dir, "options": options,
                              "run_missing": run_missing}
    choices: dict[str, Choice] = {}
    if quick:
        seeds = 1
    else:
        for t in TARGETS:
            choices[t.method] = choose_on_validation(candidates(t), out, **kwargs)
    specs = plan(seeds, quick, {m: TARGET[m].candidates[c.label] for m, c in choices.items()})
    res = run_all(specs, out, **kwargs)
    return write_report(out, specs, res, quick, choices)


#: The page per method and mode (:mod:`fedrec.reproduce.privacy_modes`), beside README.md.
MODES_NAME = "modes.md"
#: The differencing attacks on released sums (``bench/bench_aggregate_attacks.py``).
ATTACKS = "results/privacy-attacks"


def _test(runs: list[dict[str, Any]], name: str) -> str:
    values = metric(runs, name)
    if not values:
        return "–"
    mean = sum(values) / len(values)
    return f"{mean:.4f}" + (f" ({len(values)} seeds)" if len(values) > 1 else "")


def _cost(runs: list[dict[str, Any]]) -> tuple[str, str]:
    """Bytes of the training step per round and wall seconds per round (first seed)."""
    if not runs:
        return "–", "–"
    run = runs[0]
    return (format_bytes(train_bytes_per_round(run)),
            f"{run['wall_time_s'] / run['config']['rounds']:.2f}")


def _plot(out: Path, method: str, specs: list[RunSpec],
          res: dict[str, list[dict[str, Any]]]) -> bool:
    """``OUT/METHOD.png``: the test metric against the server-side epsilon, a line per dataset,
    the run without any mechanism dashed at the same height. False (and no file) where no run
    of the method has finished."""
    target = TARGET[method]

    def panel(ax: Any) -> None:
        for dataset in target.datasets:
            pts = []
            for e in EPSILONS:
                values = metric(res.get(f"dp/{method}/{dataset}/eps-{e:g}", []), target.metric)
                if values:
                    pts.append((e, sum(values) / len(values)))
            if pts:
                line = ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=dataset)
                none = metric(res.get(f"dp/{method}/{dataset}/none", []), target.metric)
                if none:
                    ax.axhline(sum(none) / len(none), ls="--", color=line[0].get_color())
        ax.set_xscale("log", base=2)
        ax.set_xlabel("epsilon against the server (delta 1e-5)")
        ax.set_ylabel(f"test {target.metric}")
        ax.legend(fontsize=8)

    if not any(s.key.startswith(f"dp/{method}/") and res.get(s.key) for s in specs):
        return False
    plot(out / f"{method}.png", [panel], f"{method}: accuracy against epsilon "
         "(dashed: no mechanism)")
    return True


#: How much a private mode may lose against the same method without noise and still be named
#: the one to use (issue 38: 5%).
KEEP = 0.05


#: How the sum is computed, which a preset may set apart from the grid's row: the masked sum
#: decodes the grid's clear ring sum bit for bit (tests/federation/test_dp_sum.py).
_SUM_ONLY = ("dp_masking", "secagg_variant")


def _is_preset_dp(method: str, runs: list[dict[str, Any]]) -> bool:
    """Whether the method's ``dp`` preset is the row these runs are: every option it sets has
    the runs' value, but for how the sum is computed (:data:`_SUM_ONLY`)."""
    preset = presets(method).get("dp")
    return bool(preset and runs) and all(
        runs[0]["config"].get(k) == v for k, v in preset.items() if k not in _SUM_ONLY)


def private_modes(res: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """For each method and dataset with its no-mechanism run: the line a run without DP quotes
    in its summary (:func:`fedrec.configs.measured.privacy_cost`): the smallest epsilon whose
    test metric is within :data:`KEEP` of the best run without user-level DP (``none``, the
    method's ``defaults`` row, its committed ``reference_runs``, and the paper's own mechanism
    where its runs are committed: a private mode must keep what the method gives without it),
    or what epsilon 16 costs where none is."""
    out = []
    for t in TARGETS:
        for dataset in t.datasets:
            means = [sum(v) / len(v) for row in ("none", "defaults")
                     if (v := metric(res.get(f"dp/{t.method}/{dataset}/{row}", []), t.metric))]
            folders = [*t.reference_runs, *([t.paper_runs] if t.paper_runs else [])]
            means += metric(committed_runs(folders, dataset), t.metric)
            if not means:
                continue
            base = max(means) if t.higher_is_better else min(means)  # the better without noise
            scored = []
            for e in EPSILONS:
                values = metric(res.get(f"dp/{t.method}/{dataset}/eps-{e:g}", []), t.metric)
                if values:
                    scored.append((e, sum(values) / len(values)))
            if not scored:
                continue
            kept = [(e, v) for e, v in scored
                    if (v >= base * (1 - KEEP) if t.higher_is_better else v <= base * (1 + KEEP))]
            key = next(iter(t.mechanism))  # dp, or the method's own upload_dp
            mode = f"{key}={t.mechanism[key]}"
            if kept:
                e, v = kept[0]
                if _is_preset_dp(t.method, res.get(f"dp/{t.method}/{dataset}/eps-{e:g}", [])):
                    mode = "--preset dp"
                line = (f"{mode}: epsilon {e:g} keeps {t.metric} {v:.4f} ({base:.4f} "
                        "without DP)")
            else:
                e, v = scored[-1]
                line = (f"{mode}: epsilon {e:g} gives {t.metric} {v:.4f} ({base:.4f} without "
                        f"DP; more than {KEEP:.0%} lost)")
            out.append({"algorithm": t.method, "dataset": dataset, "mechanism": {key: "none"},
                        "metric": t.metric, "epsilon": e, "with": v, "without": base,
                        "line": line, "command": "fedrec reproduce privacy"})
    return out


def write_report(out: Path, specs: list[RunSpec], res: dict[str, list[dict[str, Any]]],
                 quick: bool, choices: dict[str, Choice] | None = None) -> Path:
    lines = ["# User-level DP: accuracy at a given epsilon against the server", "",
             "Made by `fedrec reproduce privacy" + (" --quick" if quick else "") + "` "
             "(`fedrec.reproduce.privacy`: what each row runs). Each method's test metric at "
             "the round chosen on validation (RMSE for rating, Recall@20 for ranking). "
             "Server-side epsilon: user level, delta 1e-5, no "
             "amplification by sampling, over the rounds of the most-participating client; "
             "released model: against whoever sees only the models (every client is sampled "
             "in every round here, so it equals the server's). Attack F1 (run): the attack the "
             "run itself measured on the server's inbox, where it has one (PTF-FedRec's "
             "cross-upload attack); the attacks on the released sums are in "
             "results/privacy-attacks. Audited epsilon: a one-run audit "
             f"({AUDIT_CANARIES} canary clients, 95% confidence, "
             "`fedrec.reproduce.privacy_rows.audit_parameters`) of the row's release "
             "mechanism at its noise, clip and releases; on a no-noise row, the most the "
             "audit can certify. "
             "Per method and mode (threat, unit, attacks): [modes.md](modes.md). "
             "The commands are in the Runs table.", ""]
    audits_path = out / AUDITS_NAME
    audits: dict[str, dict[str, float]] = (json.loads(audits_path.read_text())
                                           if audits_path.is_file() else {})
    tables: dict[tuple[str, str], list[list[str]]] = {}
    for spec in specs:
        _, method, dataset, name = spec.key.split("/")
        runs = res.get(spec.key, [])
        server, released, z = privacy_figures(runs)
        tables.setdefault((method, dataset), []).append(
            [method, name, server, released, z, _test(runs, TARGET[method].metric),
             attack_f1(runs), audit_row(runs, audits), *_cost(runs)])
    for (method, dataset), rows in tables.items():
        pattern = TARGET[method].paper_runs
        for run in committed_runs([pattern] if pattern and not quick else [], dataset):
            eps = (run.get("privacy") or {}).get("epsilon")
            rows.append([method, f"paper mechanism (`{pattern.format(dataset=dataset)}`)",
                         "–" if eps is None else f"{eps:.3g}", "–", "–",
                         _test([run], TARGET[method].metric), attack_f1([run]), "–",
                         *_cost([run])])
        lines += [f"## {method} on {dataset}", "",
                  markdown_table(["method", "setting", "epsilon (server)",
                                  "epsilon (released model)", "noise multiplier",
                                  f"test {TARGET[method].metric}", "attack F1 (run)",
                                  "audited epsilon (lower bound)", "train bytes / round",
                                  "s / round"], rows)]
    for method in dict.fromkeys(m for m, _ in tables):
        if _plot(out, method, specs, res):
            lines += [f"![{method}]({method}.png)", ""]
    for method, choice in (choices or {}).items():
        rows = [[label, "–" if v is None else f"{v:.4f}", "chosen" if label == choice.label
                 else ""] for label, v in choice.validation.items()]
        lines += [f"## {method}: settings chosen on validation ({TARGET[method].datasets[0]}, "
                  f"epsilon {TUNE_EPSILON:g}, seed 0)", "",
                  markdown_table(["candidate", f"validation {choice.select_on or 'rmse'}", ""],
                                 rows)]
    out.mkdir(parents=True, exist_ok=True)  # --report-only into a new folder: nothing made it
    write_measured(out, PRIVATE_MODES_NAME, json.dumps(private_modes(res), indent=1) + "\n",
                   "the private modes", quick=quick)
    read = RowReaders(privacy_figures, lambda runs: audit_row(runs, audits), attack_f1)
    write_atomic(out / MODES_NAME,
                 write_modes(TARGETS, EPSILONS, res, Path(ATTACKS), read) + "\n",
                 "the privacy page per method and mode")
    write_atomic(audits_path, json.dumps(audits, indent=1, sort_keys=True) + "\n",
                 "the rows' audits")
    trials = [t for c in (choices or {}).values() for t in c.trials]
    return finish_report(out, lines, [*trials, *specs])
