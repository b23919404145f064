"""``fedrec reproduce feras``: Feras's tables and figures on Cora (issue 17).

What it runs (``fedrec run`` with the overrides in the written tables), on Cora's public split
and on the random 60/20/20 split (``--data-opt split=random``, split seed = run seed, so the
seeds are also different splits):

1. **Sampler comparison** (public split, N = 4, pi = 0.5): isolated hosts (``share=none``) with
   each GraphSAINT sampler, and Feras with each. The *best sampler* is the one whose isolated
   runs have the highest mean validation accuracy (at each run's validation-chosen round); it is
   chosen on validation only and used by every row of the table.
2. **Table 2's shape**: for N in {2, 4, 8} and pi in {0.2, 0.5, 0.8} (kappa = (N - 1) / N * pi),
   Feras (``share=embeddings+weights``), Feras sharing the first layer's projections ``X W1``
   instead of its output (``share_at=projection``, not the paper's; ``docs/feras.md`` compares
   the two), GraphSAINT-SW (``share=weights``) and isolated hosts,
   each the mean over hosts of the hosts' test accuracy (F1-micro) at the validation-chosen
   round; beside them GraphSAINT-SW with no private node (pi = 0, per N: what federated
   training costs by itself), centralized GraphSAINT with every attribute visible on Feras's
   network (the upper bound: the same network and options) and on Kipf & Welling's two-layer
   GCN, and full-batch centralized GCN, which do not depend on N and pi. Mean ± the
   half-width of the 95% confidence interval (Student's t) over ``--seeds`` runs.
3. **Feras's network on validation** (public split): centralized GraphSAINT with Feras's network
   (``network=gcn-dense``, every attribute visible) for each width in :data:`NETWORK_HIDDEN`
   and dropout rate in :data:`NETWORK_DROPOUT`; the pair with the highest mean validation
   accuracy is the *chosen network* (the paper keeps "the hidden dimension the same across all
   methods"; it gives none for Cora). Table 2's grid runs Feras's defaults; the **target
   cells** (N = 4, pi in :data:`TARGET_PRIVATE`, the issue's) run again with the chosen
   network for every method and for shared projections with noise sigma in
   :data:`TARGET_DEFENCES` (the attack's cheap defence), beside GraphSAINT-SW at pi = 0 and
   centralized GraphSAINT with it, with the paired-by-seed difference of each Feras variant
   over GraphSAINT-SW, and the attack (below) on it without noise and with each defence.
4. **Attack** (public split, N = 4, pi = 0.5): the AS's attribute-inference attack
   (:mod:`fedrec.attacks.attribute_inference`) with Gaussian noise of std ``sigma`` on the
   shared embeddings, sigma in :data:`NOISES`, for both share points (:data:`ATTACKED`): test
   accuracy beside the AUCs for private and public nodes.

``--quick`` (CI) runs 1 seed, N = 2 and pi = 0.5 only (the attack and the target cells too),
one round of 2 iterations per federated run (a weight average at the second) and a few epochs
of the centralized ones, the isolated sampler comparison, two networks and two noise levels: it
tests the pipeline, not the method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedrec.config import presets
from fedrec.options import RunOptions
from fedrec.reproduce.report import (
    ci95,
    finish_report,
    fmt_ci,
    markdown_table,
    metric,
    paired_differences,
    plot,
)
from fedrec.reproduce.runner import RunMissing, RunSpec, run_all, validation_values

DATASET = "cora"
SPLITS = ("public", "random")
HOSTS = (2, 4, 8)
PRIVATE = (0.2, 0.5, 0.8)
SAMPLERS = ("node", "edge", "rw", "mrw")
#: (key, label, overrides) of the federated methods: Feras (the paper's p = 1), Feras sharing the
#: first layer's projections instead (an option, not the paper's), and the two baselines.
METHODS = (("feras", "Feras", {"share": "embeddings+weights"}),
           ("feras-projection", "Feras, shared projections",
            {"share": "embeddings+weights", "share_at": "projection"}),
           ("sw", "GraphSAINT-SW", {"share": "weights"}),
           ("isolated", "isolated hosts", {"share": "none"}))
#: Weight sharing with no private node (pi = 0: every host sees every attribute): what federated
#: training itself costs against centralized GraphSAINT, one cell per N.
ALL_VISIBLE = ("all-visible", "GraphSAINT-SW, pi = 0 (all visible)",
               {"share": "weights", "private_fraction": 0.0})
#: The methods of the sampler comparison.
SAMPLER_METHODS = ("feras", "isolated")
#: The attack's share points: (key prefix, label, overrides).
ATTACKED = (("attack", "H1 (p = 1)", {}),
            ("attack/projection", "X W1 (shared projections)", {"share_at": "projection"}))
#: Feras's network, centralized: ``network=gcn-dense`` with Feras's width and dropout rate.
#: Feras's ``paper`` preset: every Feras run here uses it (the rows that vary the network or
#: what is shared set those options over it).
PAPER = presets("feras")["paper"]
FERAS_NETWORK = {"network": "gcn-dense", "hidden": PAPER["hidden"],
                 "feature_dropout": PAPER["feature_dropout"]}
#: (key, algorithm, label, overrides) of the centralized models, every attribute visible.
CENTRAL = (("saint-central-feras-net", "saint-central",
            "centralized GraphSAINT, Feras's network", FERAS_NETWORK),
           ("saint-central", "saint-central", "centralized GraphSAINT, 2-layer GCN", {}),
           ("gcn-central", "gcn-central", "centralized GCN", {}))
#: Feras's network's widths and dropout rates tried on validation (centralized GraphSAINT).
NETWORK_HIDDEN = (16, 64, 128)
NETWORK_DROPOUT = (0.1, 0.3, 0.5)
#: The issue's target cells, run again with the chosen network: N = 4 and these pi.
TARGET_HOSTS = 4
TARGET_PRIVATE = (0.5, 0.8)
#: The cheap defence's noise levels (std of the Gaussian noise on every shared value) tried on
#: the target cells and in the attack on the chosen network.
TARGET_DEFENCES = (0.03, 0.1)
#: The target cells' methods: :data:`METHODS` and shared projections with each defence; the
#: Feras variants (:data:`TARGET_COMPARED`) are compared with SW.
TARGET_METHODS = (*METHODS[:2],
                  *((f"feras-projection-noise{sigma}", f"Feras, shared projections, noise {sigma}",
                     {**METHODS[1][2], "embedding_noise": sigma}) for sigma in TARGET_DEFENCES),
                  *METHODS[2:])
TARGET_COMPARED = tuple(key for key, _, _ in TARGET_METHODS if key.startswith("feras"))
NOISES = (0.0, 0.1, 0.3, 1.0)
COMPARE = {"num_hosts": 4, "private_fraction": 0.5}  # the sampler comparison's and attack's
METRIC = "accuracy"  # F1-micro on single-label Cora
QUICK_FEDERATED = {"rounds": 1, "iterations_per_round": 2, "weight_every": 2, "presample": 20}
QUICK = {"feras": QUICK_FEDERATED, "saint-central": {"rounds": 2, "presample": 20},
         "gcn-central": {"rounds": 10}}


def kappa(num_hosts: int, private_fraction: float) -> float:
    """The fraction of the nodes each host cannot see."""
    return (num_hosts - 1) / num_hosts * private_fraction


def grid(quick: bool) -> tuple[tuple[str, ...], tuple[int, ...], tuple[float, ...],
                               tuple[float, ...]]:
    """(splits, N values, pi values, noise levels) of a reproduction."""
    if quick:
        return SPLITS, HOSTS[:1], PRIVATE[1:2], NOISES[::3]
    return SPLITS, HOSTS, PRIVATE, NOISES


def specs_of(key: str, algorithm: str, split: str, overrides: dict[str, Any],
             seeds: tuple[int, ...], quick: bool) -> list[RunSpec]:
    """The runs of one cell; on the random split one spec per seed (split seed = run seed)."""
    ov = {**(QUICK.get(algorithm, {}) if quick else {}), **overrides}
    preset = "paper" if algorithm == "feras" else None
    if split == "public":
        return [RunSpec(key, algorithm, DATASET, ov, seeds, preset=preset)]
    return [RunSpec(key, algorithm, DATASET, ov, (s,), {"split": "random", "seed": s},
                    preset=preset) for s in seeds]


def sampler_plan(seeds: tuple[int, ...], quick: bool) -> list[RunSpec]:
    methods = [m for m in METHODS if m[0] == "isolated" or (m[0] == "feras" and not quick)]
    return [s for key, _, method in methods for sampler in SAMPLERS
            for s in specs_of(f"sampler/{key}/{sampler}", "feras", "public",
                              {**COMPARE, **method, "sampler": sampler}, seeds, quick)]


def best_sampler(res: dict[str, list[dict[str, Any]]]) -> str:
    """The sampler of the isolated runs with the highest mean validation accuracy (the first of
    :data:`SAMPLERS` on a tie or when none ran)."""
    scores = {}
    for sampler in SAMPLERS:
        vals = validation_values(res.get(f"sampler/isolated/{sampler}", []))
        if vals:
            scores[sampler] = float(np.mean(vals))
    return max(scores, key=lambda k: (scores[k], -SAMPLERS.index(k))) if scores else SAMPLERS[0]


def network_options(hidden: int, dropout: float) -> dict[str, Any]:
    return {"hidden": hidden, "feature_dropout": dropout}


def network_grid(quick: bool) -> list[tuple[int, float]]:
    """The (width, dropout rate) pairs tried: --quick the two corners."""
    pairs = [(h, d) for h in NETWORK_HIDDEN for d in NETWORK_DROPOUT]
    return [pairs[0], pairs[-1]] if quick else pairs


def network_plan(sampler: str, seeds: tuple[int, ...], quick: bool) -> list[RunSpec]:
    """Centralized GraphSAINT on Feras's network for each pair of :func:`network_grid`."""
    return [s for h, d in network_grid(quick)
            for s in specs_of(f"network/h{h}-d{d}", "saint-central", "public",
                              {**FERAS_NETWORK, **network_options(h, d), "sampler": sampler},
                              seeds, quick)]


def best_network(res: dict[str, list[dict[str, Any]]], quick: bool) -> tuple[int, float]:
    """The pair whose runs have the highest mean validation accuracy (the first on a tie or
    when none ran: Feras's defaults come first)."""
    pairs = network_grid(quick)
    scores = {}
    for h, d in pairs:
        vals = validation_values(res.get(f"network/h{h}-d{d}", []))
        if vals:
            scores[(h, d)] = float(np.mean(vals))
    return max(scores, key=lambda k: (scores[k], -pairs.index(k))) if scores else pairs[0]


def target_private(quick: bool) -> tuple[float, ...]:
    return TARGET_PRIVATE[:1] if quick else TARGET_PRIVATE


def target_noises(quick: bool) -> tuple[float, ...]:
    """The attack's noise levels on the chosen network: none and each defence."""
    return NOISES[:1] if quick else (NOISES[0], *TARGET_DEFENCES)


def target_plan(sampler: str, network: tuple[int, float], seeds: tuple[int, ...],
                quick: bool) -> list[RunSpec]:
    """The target cells, GraphSAINT-SW at pi = 0 and centralized GraphSAINT on the chosen
    network (public split)."""
    net = {**network_options(*network), "sampler": sampler}
    hosts = HOSTS[0] if quick else TARGET_HOSTS
    out = [s for key, _, method in TARGET_METHODS for pi in target_private(quick)
           for s in specs_of(f"target/{key}/N{hosts}-pi{pi}", "feras", "public",
                             {"num_hosts": hosts, "private_fraction": pi, **method, **net},
                             seeds, quick)]
    out += specs_of(f"target/{ALL_VISIBLE[0]}/N{hosts}", "feras", "public",
                    {"num_hosts": hosts, **ALL_VISIBLE[2], **net}, seeds, quick)
    out += specs_of("target/saint-central-feras-net", "saint-central", "public",
                    {**FERAS_NETWORK, **net}, seeds, quick)
    return out + attack_plan("target/", net, target_noises(quick), seeds, quick)


def main_plan(sampler: str, seeds: tuple[int, ...], quick: bool) -> list[RunSpec]:
    splits, hosts, private, noises = grid(quick)
    out: list[RunSpec] = []
    for split in splits:
        for key, _, method in METHODS:
            out += [s for n in hosts for pi in private
                    for s in specs_of(f"table/{split}/{key}/N{n}-pi{pi}", "feras", split,
                                      {"num_hosts": n, "private_fraction": pi, **method,
                                       "sampler": sampler}, seeds, quick)]
        key, _, method = ALL_VISIBLE
        out += [s for n in hosts
                for s in specs_of(f"table/{split}/{key}/N{n}", "feras", split,
                                  {"num_hosts": n, **method, "sampler": sampler}, seeds, quick)]
        for key, algorithm, _, overrides in CENTRAL:
            extra = {"sampler": sampler} if algorithm == "saint-central" else {}
            out += specs_of(f"central/{split}/{key}", algorithm, split, {**overrides, **extra},
                            seeds, quick)
    return out + attack_plan("", {"sampler": sampler}, noises, seeds, quick)


def attack_plan(prefix: str, options: dict[str, Any], noises: tuple[float, ...],
                seeds: tuple[int, ...], quick: bool) -> list[RunSpec]:
    """The attack runs (both share points, each noise level) at :data:`COMPARE` with
    ``options``, keyed ``{prefix}{share point's key}/noise-{sigma}``."""
    quick_attack = {"num_hosts": 2, "attack_targets": 50} if quick else {}  # the costly runs
    return [s for key, _, shared in ATTACKED for sigma in noises
            for s in specs_of(f"{prefix}{key}/noise-{sigma}", "feras", "public",
                              {**COMPARE, **shared, **options, "attack": True,
                               "embedding_noise": sigma, **quick_attack}, seeds, quick)]


def attack_rows(res: dict[str, list[dict[str, Any]]], prefix: str, noises: tuple[float, ...]
                ) -> tuple[list[str], list[list[str]], dict[str, list[tuple[float, ...]]]]:
    """The attack table's headers and rows for the runs keyed by :func:`attack_plan`, and per
    share point the (sigma, accuracy, private inversion AUC, private decoder AUC) means."""
    auc_keys = [(kind, rule) for kind in ("private", "public")
                for rule in ("inversion", "decoder", "prior")]
    rows, pts = [], {}
    for key, shared, _ in ATTACKED:
        for sigma in noises:
            runs = res.get(f"{prefix}{key}/noise-{sigma}", [])
            acc = metric(runs, METRIC)
            aucs = {k: metric(runs, f"attack_auc_{k[0]}_{k[1]}") for k in auc_keys}
            rows.append([shared, str(sigma), fmt_ci(acc),
                         *(fmt_ci(aucs[k]) for k in auc_keys)])
            pts.setdefault(shared, []).append(
                (sigma, ci95(acc)[0], ci95(aucs[("private", "inversion")])[0],
                 ci95(aucs[("private", "decoder")])[0]))
    headers = ["shared", "noise sigma", "test accuracy",
               *(f"AUC {kind} {rule}" for kind, rule in auc_keys)]
    return headers, rows, pts


def _plot_kappa(out: Path, res: dict[str, list[dict[str, Any]]], quick: bool) -> None:
    splits, hosts, private, _ = grid(quick)

    def panel(split: str):
        def draw(ax: Any) -> None:
            cells = sorted((kappa(n, pi), n, pi) for n in hosts for pi in private)
            xs = [c[0] for c in cells]
            for key, label, _ in METHODS:
                ys = [ci95(metric(res.get(f"table/{split}/{key}/N{n}-pi{pi}", []), METRIC))[0]
                      for _, n, pi in cells]
                ax.plot(xs, ys, "o-", label=label)
            for (key, _, label, _), color in zip(CENTRAL, ("grey", "silver", "black"),
                                                 strict=True):
                y = ci95(metric(res.get(f"central/{split}/{key}", []), METRIC))[0]
                ax.axhline(y, linestyle="--", linewidth=1, label=label, color=color)
            ax.set_xlabel("kappa (share of nodes a host cannot see)")
            ax.set_ylabel("test accuracy (F1-micro), mean over hosts")
            ax.set_title(f"{split} split")
            ax.legend(fontsize=7)
        return draw

    plot(out / "f1_vs_kappa.png", [panel(s) for s in splits], "Feras on Cora")


def _network_section(res: dict[str, list[dict[str, Any]]], network: tuple[int, float],
                     quick: bool) -> list[str]:
    hosts = HOSTS[0] if quick else TARGET_HOSTS
    lines = ["## Feras's network chosen on validation (public split)\n",
             "Centralized GraphSAINT on Feras's network (two GCN layers of `hidden` units and "
             "a dense output layer, `network=gcn-dense`), every attribute visible: validation "
             "and test accuracy at each run's validation-chosen round. The pair with the "
             "highest mean validation accuracy is chosen; test accuracy is never read to "
             "choose.\n"]
    rows = []
    for h, d in network_grid(quick):
        runs = res.get(f"network/h{h}-d{d}", [])
        val = validation_values(runs)
        mark = " (chosen)" if (h, d) == network else ""
        rows.append([f"{h}{mark}", str(d), fmt_ci(val), fmt_ci(metric(runs, METRIC))])
    lines.append(markdown_table(["hidden", "dropout", "validation", "test"], rows))
    h, d = network
    lines.append(f"## Target cells on the chosen network (public split, N = {hosts}, "
                 f"hidden {h}, dropout {d})\n")
    lines.append("Every method on the chosen network (test accuracy, mean over hosts, 95% CI); "
                 "`- SW` is the difference to GraphSAINT-SW paired by seed (mean ± 95% CI of "
                 "the per-seed differences).\n")
    central = res.get("target/saint-central-feras-net", [])
    visible = res.get(f"target/{ALL_VISIBLE[0]}/N{hosts}", [])
    trows = []
    for pi in target_private(quick):
        cell = {key: res.get(f"target/{key}/N{hosts}-pi{pi}", [])
                for key, _, _ in TARGET_METHODS}
        diffs = [paired_differences(cell[key], cell["sw"], METRIC) for key in TARGET_COMPARED]
        trows.append([str(pi), f"{kappa(hosts, pi):.3f}",
                      *(fmt_ci(metric(cell[key], METRIC)) for key, _, _ in TARGET_METHODS),
                      *(fmt_ci(dd, signed=True) for dd in diffs),
                      fmt_ci(metric(visible, METRIC)), fmt_ci(metric(central, METRIC))])
    lines.append(markdown_table(
        ["pi", "kappa", *(label for _, label, _ in TARGET_METHODS),
         *(f"{label} - SW" for key, label, _ in TARGET_METHODS if key in TARGET_COMPARED),
         ALL_VISIBLE[1],
         "centralized GraphSAINT, Feras's network"], trows))
    lines.append(f"The AS's attribute inference on the chosen network (N = {hosts}, pi = 0.5; "
                 "columns as in the attack section below):\n")
    headers, arows, _ = attack_rows(res, "target/", target_noises(quick))
    lines.append(markdown_table(headers, arows))
    return lines


def write_report(out: Path, specs: list[RunSpec], res: dict[str, list[dict[str, Any]]],
                 sampler: str, network: tuple[int, float], quick: bool) -> Path:
    splits, hosts, private, noises = grid(quick)
    lines = ["# Feras reproduction (`fedrec reproduce feras" + (" --quick" if quick else "")
             + "`)\n",
             "Cora, node classification. Every figure is read from the runs' `results.json` "
             "under `runs/`: test accuracy (= F1-micro on single-label nodes) at the round "
             "chosen on validation accuracy; for the federated methods the mean over hosts of "
             "each host's accuracy on its visible test nodes. Cells: mean ± half-width of the "
             "95% confidence interval (Student's t) over runs, run count in brackets.\n"]
    if quick:
        lines.append("**Quick mode**: one seed, one round of 2 iterations per federated run; "
                     "the numbers test the pipeline, not the method.\n")

    lines.append("## Sampler comparison (public split, N = 4, pi = 0.5)\n")
    srows, bars = [], []
    for sampler_name in SAMPLERS:
        cells = [fmt_ci(metric(res.get(f"sampler/{key}/{sampler_name}", []), METRIC))
                 for key in SAMPLER_METHODS]
        val = validation_values(res.get(f"sampler/isolated/{sampler_name}", []))
        srows.append([sampler_name, *cells, fmt_ci(val)])
        bars.append(ci95(metric(res.get(f"sampler/isolated/{sampler_name}", []), METRIC))[0])
    lines.append(markdown_table(["sampler", "Feras test", "isolated test",
                                 "isolated validation"], srows))
    lines.append(f"Best sampler (isolated hosts' validation accuracy): **{sampler}**, used by "
                 "every row below.\n")
    lines.append("![samplers](samplers.png)\n")
    plot(out / "samplers.png", [lambda ax: (ax.bar(list(SAMPLERS), bars),
                                            ax.set_ylabel("isolated hosts' test accuracy"))],
         "GraphSAINT samplers, isolated hosts (Cora, N = 4, pi = 0.5)")

    headers = ["split", "N", "pi", "kappa", *(label for _, label, _ in METHODS),
               ALL_VISIBLE[1], *(label for _, _, label, _ in CENTRAL)]
    rows = []
    for split in splits:
        central = [fmt_ci(metric(res.get(f"central/{split}/{key}", []), METRIC))
                   for key, _, _, _ in CENTRAL]
        for n in hosts:
            for pi in private:
                cells = [fmt_ci(metric(res.get(f"table/{split}/{key}/N{n}-pi{pi}", []), METRIC))
                         for key, _, _ in METHODS]
                visible = fmt_ci(metric(res.get(f"table/{split}/{ALL_VISIBLE[0]}/N{n}", []),
                                        METRIC))
                rows.append([split, str(n), str(pi), f"{kappa(n, pi):.3f}", *cells, visible,
                             *central])
    lines.append("## Table 2's shape: test accuracy (F1-micro), mean over hosts\n")
    lines.append(markdown_table(headers, rows))
    lines.append("![F1 against kappa](f1_vs_kappa.png)\n")
    _plot_kappa(out, res, quick)
    lines += _network_section(res, network, quick)

    lines.append("## Attribute inference by the AS (public split, pi = 0.5, N = "
                 f"{2 if quick else 4})\n")
    lines.append("AUC of ranking each node's Cora words, mean over target nodes (chance 0.5); "
                 "`inversion` knows no attribute, `decoder` knows the public nodes' attributes, "
                 "`prior` is their word frequencies (threat model: "
                 "`fedrec.attacks.attribute_inference`).\n")
    headers, arows, pts = attack_rows(res, "", noises)
    lines.append(markdown_table(headers, arows))
    lines.append("![attack](attack.png)\n")
    xs = [str(sigma) for sigma in noises]

    def accuracy(ax: Any) -> None:
        for shared, p in pts.items():
            ax.plot(xs, [q[1] for q in p], "o-", label=shared)
        ax.set_xlabel("noise sigma")
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7)

    def auc(ax: Any) -> None:
        for shared, p in pts.items():
            ax.plot(xs, [q[2] for q in p], "o-", label=f"inversion, {shared}")
            ax.plot(xs, [q[3] for q in p], "s--", label=f"decoder, {shared}")
        ax.set_xlabel("noise sigma")
        ax.set_ylabel("AUC, private nodes")
        ax.legend(fontsize=7)

    plot(out / "attack.png", [accuracy, auc],
         "Feras: the AS's attribute inference against noise on shared embeddings")

    return finish_report(out, lines, specs)


def reproduce(out: Path, *, quick: bool = False, seeds: int = 3, sweep_seeds: int = 1,
              data_dir: str | Path | None = None, options: RunOptions | None = None,
              run_missing: RunMissing = True) -> Path:
    """Run (or resume) the reproduction into ``out`` and write its README; ``sweep_seeds`` is
    not used (every part runs ``seeds`` seeds)."""
    chosen = (0,) if quick else tuple(range(seeds))
    kwargs = dict(data_dir=data_dir, options=options, run_missing=run_missing)
    first = sampler_plan(chosen, quick)
    sampler = best_sampler(run_all(first, out, **kwargs))
    networks = network_plan(sampler, chosen, quick)
    network = best_network(run_all(networks, out, **kwargs), quick)
    specs = (first + networks + main_plan(sampler, chosen, quick)
             + target_plan(sampler, network, chosen, quick))
    # Once more over all: the choices' runs load from disk, and a table cell whose
    # configuration equals one of them reuses it instead of running again.
    return write_report(out, specs, run_all(specs, out, **kwargs), sampler, network, quick)
