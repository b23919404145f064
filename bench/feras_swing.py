"""Round-to-round swing of Feras's accuracy on Cora: which of its parts makes it (docs/feras.md).

    FEDREC_DATA=/work/shared/datasets OMP_NUM_THREADS=1 nice -n 19 python bench/feras_swing.py \
        --seeds 0,1,2 --rounds 12 --from-round 4 --set lr=0.05 [--set schedule=synchronous ...] \
        [--moments keep|reset|average] [--gradient own|visible|none] \
        [--expiry ITERATIONS] [--json OUT.json]

Runs ``fedrec run feras --dataset cora`` (defaults: N = 4, pi = 0.5, sequential) in process for
each seed with the ``--set`` options and prints, per seed and averaged over seeds, the *swing*:
the mean absolute change of validation (and test) accuracy between consecutive evaluated rounds
from ``--from-round`` on, the largest drop, and the same for the round's training loss.

``--moments`` is a diagnostic patch, not a protocol: ``reset`` drops every host's Adam moments
when it takes the weight average; ``average`` replaces them by their mean over the hosts (read
from the runtime's party states, which no party could do: an upper bound on what averaging the
moments through the AS would give). ``keep`` (default) is Feras as packaged.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import statistics
import sys
import time

import torch
import yaml

from fedrec import api
from fedrec.algorithms.methods.feras.aggregator import FerasAggregator
from fedrec.algorithms.methods.feras.host import FerasHost
from fedrec.algorithms.methods.feras.server import FerasServer

ZERO_SECRET = "0" * 64
_iteration = FerasServer._iteration
_shared = FerasHost._shared
_average_embeddings = FerasAggregator.average_embeddings


def patch_expiry(iterations: int, hosts: int) -> None:
    """Sequential table entries older than ``iterations`` iterations are dropped before the AS
    averages (0: kept for ever, Feras as packaged; 1: only this iteration's uploads). The AS
    counts its ``persist`` calls, ``hosts`` per iteration (every host trains every iteration)."""
    if iterations == 0:
        FerasAggregator.average_embeddings = _average_embeddings
        return

    def average_embeddings(self, ctx, payload):
        if not payload["persist"]:
            return _average_embeddings(self, ctx, payload)
        now = ctx.state.setdefault("calls", 0)
        stamps = ctx.state.setdefault("stamps", {})
        for host, (_, held) in ctx.state["table"].items():
            held &= stamps[host] // hosts > now // hosts - iterations
        out = _average_embeddings(self, ctx, payload)
        for m in ctx.inbox:
            if m.step == "embed":
                stamp = stamps.setdefault(m.sender, torch.zeros(self.num_nodes, dtype=torch.long))
                stamp[torch.as_tensor(m.payload["seen"]).long()] = now
        ctx.state["calls"] = now + 1
        return out

    FerasAggregator.average_embeddings = average_embeddings


def patch_gradient(mode: str) -> None:
    """Through which received averages the gradient flows back: ``own`` (Feras as packaged:
    every one, straight through the host's own computation), ``visible`` (only those of nodes
    the host sees; an unseen node's average is a constant) or ``none`` (every average is a
    constant; the gradient reaches the first layer through the nodes without one only)."""
    if mode == "own":
        FerasHost._shared = _shared
        return

    def shared(self, ctx, h1, nodes):
        if not self.cfg.shares_embeddings:
            return h1
        received, has = self._averages(ctx, nodes, self.cfg.hidden)
        through = has.clone() if mode == "visible" else torch.zeros_like(has)
        if mode == "visible":
            through &= torch.from_numpy(ctx.data.visible_mask()[nodes.numpy()])
        straight = h1 + (received - h1.detach())
        out = torch.where(has[:, None], received, h1)
        return torch.where(through[:, None], straight, out)

    FerasHost._shared = shared


def patch_moments(mode: str) -> None:
    """Make the server's iteration do ``mode`` to the hosts' Adam moments after a weight
    average (see the module docstring)."""
    if mode == "keep":
        FerasServer._iteration = _iteration
        return

    def iteration(self, rt, hosts, t):
        replies = _iteration(self, rt, hosts, t)
        if not (self.cfg.shares_weights and t % self.cfg.weight_every == 0):
            return replies
        states = [rt.states[h] for h in hosts if rt.states[h]["adam"] is not None]
        if mode == "reset":
            for s in states:
                s["adam"] = None
            return replies
        for i in states[0]["adam"]["state"]:
            for key in ("exp_avg", "exp_avg_sq"):
                mean = torch.stack([s["adam"]["state"][i][key] for s in states]).mean(0)
                for s in states:
                    s["adam"]["state"][i][key] = mean.clone()
        return replies

    FerasServer._iteration = iteration


def swing(values: list[float]) -> tuple[float, float]:
    """Mean absolute consecutive change and the largest single drop."""
    steps = [b - a for a, b in itertools.pairwise(values)]
    return statistics.fmean(abs(s) for s in steps), max(0.0, -min(steps))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--from-round", type=int, default=4)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--moments", choices=("keep", "reset", "average"), default="keep")
    p.add_argument("--gradient", choices=("own", "visible", "none"), default="own")
    p.add_argument("--expiry", type=int, default=0, metavar="ITERATIONS")
    p.add_argument("--json")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    patch_moments(args.moments)
    patch_gradient(args.gradient)
    options = {"rounds": args.rounds}
    for item in args.set:
        key, _, value = item.partition("=")
        options[key] = yaml.safe_load(value)  # as --set reads it
    patch_expiry(args.expiry, int(options.get("num_hosts", 4)))
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        t0 = time.perf_counter()
        res = api.run("feras", "cora", config={**options, "seed": seed},
                      client_secret=ZERO_SECRET)
        hist = [h for h in res.history if "eval" in h and h["round"] >= args.from_round]
        val = [h["eval"]["val_accuracy"] for h in hist]
        test = [h["eval"]["accuracy"] for h in hist]
        loss = [h["train"]["train_loss"] for h in hist]
        row = {"seed": seed, "val": val, "test": test, "loss": loss,
               "val_swing": swing(val), "test_swing": swing(test), "loss_swing": swing(loss),
               "wall_s": time.perf_counter() - t0}
        rows.append(row)
        print(f"seed {seed}: val swing {row['val_swing'][0]:.4f} (max drop "
              f"{row['val_swing'][1]:.3f}), test swing {row['test_swing'][0]:.4f}, loss swing "
              f"{row['loss_swing'][0]:.4f}; val {' '.join(f'{v:.3f}' for v in val)}; loss "
              f"{' '.join(f'{v:.3f}' for v in loss)} ({row['wall_s']:.0f} s)", flush=True)
    summary = {k: statistics.fmean(r[k][0] for r in rows)
               for k in ("val_swing", "test_swing", "loss_swing")}
    summary["val_max_drop"] = statistics.fmean(r["val_swing"][1] for r in rows)
    summary["val_mean"] = statistics.fmean(statistics.fmean(r["val"]) for r in rows)
    print("MEAN " + " ".join(f"{k} {v:.4f}" for k, v in summary.items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": shlex.join(sys.argv), "rows": rows, "summary": summary}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
