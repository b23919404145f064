"""Feras on a synthetic graph the size of Reddit: sampler throughput, one Feras epoch with N
hosts against one epoch of centralized GraphSAINT (saint-central) with the same sampler, and
the peak memory of the whole run (targets: ratio at most 1.5, peak at most 8 GiB).

    python bench/bench_feras.py [--scale 1.0] [--hosts 4] [--sampler rw] [--seconds 10]
                                [--epochs 3] [--threads 1] [--seed 0] [--json PATH]

The graph (seeded): ``232,965 * scale`` nodes and about ``11,606,919 * scale`` undirected edges,
long-tailed (:func:`bench_saint_samplers.long_tailed_graph`: Chung-Lu with Pareto(1.5)
weights), 602 non-negative features (a class centroid plus noise), 41 classes of Zipf-like
sizes, Reddit's 66/10/24 train/validation/test split. Sampler budgets are GraphSAINT-style
Reddit budgets times ``scale`` (:func:`bench_saint_samplers.saint_options`); both methods use
hidden 128 (GraphSAINT's Reddit width) and ``presample`` 50 subgraphs for the normalisation.

*One epoch* is the same number ``S`` of subgraph steps for both: saint-central's round,
``S = ceil(|V| / mean subgraph size)`` Adam steps (the graph covered once on average); Feras's
is ``ceil(S / N)`` iterations of its default sequential schedule (each host one subgraph an
iteration: embed, the AS's average, train), so the hosts together take as many steps as the
central trainer and the ratio is the price of federation on one machine (each host's first
layer computed twice, the messages and their metering, the AS's averages, the weight average
every q = 10 iterations), not of N times the work. The one-off setup (the views, the
pre-sampling) is timed apart and not in the ratio. The two's epochs alternate (``--epochs``;
the medians are reported), timed in wall and in CPU seconds. Peak memory is the process's peak
RSS (``ru_maxrss``) over the graph, both trainers and all epochs together.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_saint_samplers import (  # a sibling script, not a package
    REDDIT_EDGES,
    REDDIT_NODES,
    long_tailed_graph,
    reddit_samplers,
    saint_options,
    throughput,
)

from fedrec.algorithms import get_algorithm, resolve_config
from fedrec.data.types import GraphDataset
from fedrec.federation.secrets import ClientSecrets

REDDIT_FEATURES, REDDIT_CLASSES = 602, 41


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def reddit_like(scale: float, seed: int) -> tuple[GraphDataset, Any]:
    """The synthetic graph (module docstring) as a dataset, and its :class:`CsrGraph`."""
    n = round(REDDIT_NODES * scale)
    graph = long_tailed_graph(n, round(REDDIT_EDGES * scale), seed)
    gen = torch.Generator().manual_seed(seed)
    sizes = 1.0 / torch.arange(1, REDDIT_CLASSES + 1, dtype=torch.float64)  # Zipf-like classes
    y = torch.multinomial(sizes, n, replacement=True, generator=gen)
    centroids = torch.rand(REDDIT_CLASSES, REDDIT_FEATURES, generator=gen)
    x = torch.rand(n, REDDIT_FEATURES, generator=gen).mul_(2.0).add_(centroids[y])
    role = torch.rand(n, generator=gen).numpy()
    ds = GraphDataset(
        name="reddit-synthetic", x=x.numpy(), y=y.numpy(),
        edge_index=np.stack([graph.rows().numpy(), graph.indices.numpy()]),
        train_mask=role < 0.66, val_mask=(role >= 0.66) & (role < 0.76), test_mask=role >= 0.76,
        num_classes=REDDIT_CLASSES)
    return ds, graph


def timed(fn: Any) -> tuple[Any, float, float]:
    """``fn()``, its wall seconds and this process's CPU seconds (with one thread the CPU time
    is what a machine shared with other jobs does not inflate)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="graph and budgets times this")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--private-fraction", type=float, default=0.5)
    ap.add_argument("--sampler", default="rw", choices=["node", "edge", "rw", "mrw"],
                    help="the sampler of both epochs")
    ap.add_argument("--seconds", type=float, default=10.0, help="throughput time per sampler")
    ap.add_argument("--epochs", type=int, default=3,
                    help="epochs of each, alternated; the medians are reported")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out: dict[str, Any] = {"args": vars(args)}

    (ds, graph), build_s, _ = timed(lambda: reddit_like(args.scale, args.seed))
    deg = graph.degree.double()
    out["graph"] = {"nodes": graph.num_nodes, "edges": graph.num_edges,
                    "features": REDDIT_FEATURES, "classes": REDDIT_CLASSES,
                    "degree_mean": float(deg.mean()), "degree_median": float(deg.median()),
                    "degree_max": int(deg.max()), "build_s": build_s}
    print(f"graph: {graph.num_nodes:,} nodes, {graph.num_edges:,} undirected edges, "
          f"{REDDIT_FEATURES} features, {REDDIT_CLASSES} classes; degree mean {deg.mean():.1f} "
          f"median {deg.median():.0f} max {int(deg.max()):,}; built in {build_s:.1f} s; "
          f"peak RSS {peak_rss_gib():.2f} GiB")

    print("\n| sampler | subgraphs/s | mean nodes | mean edges |\n|---|---|---|---|")
    out["samplers"] = {}
    for name, sampler in reddit_samplers(graph, args.scale).items():
        rate, nodes, edges = throughput(sampler, args.seconds, args.seed)
        out["samplers"][name] = {"subgraphs_per_s": rate, "mean_nodes": nodes,
                                 "mean_edges": edges}
        print(f"| {name} | {rate:.2f} | {nodes:,.0f} | {edges:,.0f} |")
    del graph
    peaks = {"graph and samplers": peak_rss_gib()}

    common = {**saint_options(args.scale), "sampler": args.sampler, "hidden": 128,
              "presample": 50, "lr": 0.01, "seed": args.seed, "rounds": args.epochs}
    secrets = ClientSecrets(bytes(32))
    central_cfg = resolve_config("saint-central", "reddit", overrides=common)
    central, central_setup, _ = timed(lambda: get_algorithm("saint-central").trainer(
        central_cfg, ds, torch.device("cpu")))
    steps = int(central.steps)
    iterations = math.ceil(steps / args.hosts)
    feras_cfg = resolve_config("feras", "reddit", overrides={
        **common, "num_hosts": args.hosts, "private_fraction": args.private_fraction,
        "iterations_per_round": iterations})

    def feras_setup() -> Any:
        trainer = get_algorithm("feras").trainer(feras_cfg, ds, torch.device("cpu"), secrets)
        host = trainer.job.parties[0]
        host.logic.topology(host.data)  # the public pre-sampling, shared by every host
        return trainer

    peaks["+ saint-central built"] = peak_rss_gib()
    feras, feras_setup_s, _ = timed(feras_setup)
    peaks["+ feras built"] = peak_rss_gib()
    central_runs, feras_runs = [], []
    for rnd in range(1, args.epochs + 1):  # alternated, so a change in the load hits both
        central_runs.append(timed(lambda rnd=rnd: central.train_round(rnd))[1:])
        feras_runs.append(timed(lambda rnd=rnd: feras.train_round(rnd))[1:])
    central_s, central_cpu = (float(np.median(v)) for v in zip(*central_runs, strict=True))
    feras_s, feras_cpu = (float(np.median(v)) for v in zip(*feras_runs, strict=True))
    ratio, ratio_cpu = feras_s / central_s, feras_cpu / central_cpu
    peaks["+ both epochs"] = peak_rss_gib()
    peak = peak_rss_gib()
    ledger = feras.ledger.totals(round=1)
    out["epoch"] = {"sampler": args.sampler, "hosts": args.hosts, "subgraph_steps": steps,
                    "feras_iterations": iterations, "central_s": central_s, "feras_s": feras_s,
                    "central_cpu_s": central_cpu, "feras_cpu_s": feras_cpu, "ratio": ratio,
                    "ratio_cpu": ratio_cpu, "central_setup_s": central_setup,
                    "feras_setup_s": feras_setup_s, "peak_rss_gib": peak,
                    "feras_bytes": int(ledger["bytes_up"] + ledger["bytes_down"]),
                    "peak_rss_gib_after": peaks}
    print(f"\none epoch (median of {args.epochs}), sampler {args.sampler}: saint-central "
          f"{steps} subgraphs in "
          f"{central_s:.2f} s ({central_cpu:.2f} s CPU); feras N = {args.hosts}, {iterations} "
          f"iterations ({iterations * args.hosts} host steps) in {feras_s:.2f} s "
          f"({feras_cpu:.2f} s CPU)")
    print("\n| | value | target |\n|---|---|---|")
    print(f"| Feras epoch / saint-central epoch, wall (CPU) | {ratio:.2f} ({ratio_cpu:.2f}) "
          "| <= 1.5 |")
    per_step = (feras_cpu / (iterations * args.hosts)) / (central_cpu / steps)
    out["epoch"]["per_step_ratio_cpu"] = per_step
    print(f"| the same per subgraph step (CPU; {iterations * args.hosts} host steps against "
          f"{steps}) | {per_step:.2f} | |")
    print(f"| peak RSS (whole run) | {peak:.2f} GiB | <= 8 GiB |")
    print("| peak RSS after: " + ", ".join(f"{k} {v:.2f}" for k, v in peaks.items())
          + " GiB | | |")
    print(f"| setup (views, pre-sampling): saint-central / feras | {central_setup:.1f} s / "
          f"{feras_setup_s:.1f} s | |")
    print(f"| Feras epoch's messages (ledger) | {out['epoch']['feras_bytes'] / 2**20:.1f} MiB "
          "| |")
    if args.json:  # the command first: the benchmarks page shows it over the figures
        command = shlex.join(["python", "bench/bench_feras.py", *sys.argv[1:]])
        Path(args.json).write_text(json.dumps({"command": command, **out}, indent=2))


if __name__ == "__main__":
    main()
