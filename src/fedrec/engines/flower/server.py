"""The ServerApp: the algorithm's orchestrator over a :class:`FlowerRuntime`.

Run configuration (``[tool.flwr.app.config]``, written by ``fedrec deploy``): ``algorithm``,
``dataset``, ``config`` (the resolved configuration as JSON, identical on every party),
``max-users``, ``num-nodes`` (SuperNodes to wait for), ``out-dir`` (where ``progress.jsonl``,
``results.json`` or ``error.txt`` are written), ``connect-timeout``, ``call-timeout``,
``straggler-timeout``, ``experimenter-oracle-dir`` (empty: none; see below).

The server never loads data for its protocol: its :class:`~fedrec.algorithms.base.ServerLogic`
comes from the algorithm's ``build_job`` on the public metadata the SuperNodes report
(:func:`~fedrec.data.metadata_dataset`, provided by the dataset's type: the number of users and
items and the rating scale, or a graph's node, feature and class counts; everything else the
server logic needs, e.g. PTF-FedRec's split seed and test fraction or fedavg-gcn's number of
hosts, is in the shared configuration, or is a public fact the job built on a client's data
states and the client SuperNodes report beside the metadata, e.g. FL-MV-DSSM's item-feature
width: :attr:`~fedrec.algorithms.base.FederatedJob.public_facts`); client logic and data built
alongside are dropped at once. The clients the job declares must be those the SuperNodes host;
the runtime takes the job's order of them (the simulator's), from which it samples cohorts.

**The experimenter's oracle.** Some algorithms evaluate a model that never leaves the server
(PTF-FedRec ranks its hidden graph model against the held-out interactions) or score an attack
the server mounts against ground truth; that truth is the *experimenter's*, not something the
server learns from the protocol (the registry's
:attr:`~fedrec.algorithms.base.AlgorithmSpec.instruments`). Delegating that evaluation to the
clients would mean shipping the hidden model to them, which the protocol forbids, so the
deployment does what the simulator does: with ``experimenter-oracle-dir`` set (``fedrec deploy
--experimenter-oracle``) the ServerApp loads the dataset from that directory *only* to build
these instruments (after the server logic was built from metadata, and checked against the
nodes' metadata), hands them to the server logic with
:meth:`~fedrec.algorithms.base.ServerLogic.attach_instruments`, and drops the dataset. They
compute metrics only (PTF-FedRec: the server-model ranking metrics, the top-guess attack's
scores); no training step reads them. Without it such an algorithm reports only what its
clients measure (PTF-FedRec: ``client_*`` metrics, no attack statistics); ``results.json``
records which (``engine.experimenter_oracle``).
"""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from fedrec.algorithms.base import (
    AlgorithmSpec,
    ServerLogic,
    Trainer,
    observe,
    privacy_report_of,
)
from fedrec.config import RunConfig, to_dict
from fedrec.core.files import write_atomic, writing
from fedrec.data.types import FACTS
from fedrec.engines.common import load_sliced, metadata_dataset, public_meta, resolve
from fedrec.engines.flower.deploy import decode_config
from fedrec.engines.flower.runtime import FlowerRuntime
from fedrec.errors import ConfigError
from fedrec.federation.runtime import seed_everything
from fedrec.privacy.report import PrivacyReport
from fedrec.rounds import RunResult, run_rounds


class FlowerTrainer(Trainer):
    """A :class:`~fedrec.algorithms.base.Trainer` whose runtime is a :class:`FlowerRuntime`."""

    def __init__(self, server: ServerLogic, runtime: FlowerRuntime) -> None:
        self.server = server
        self.runtime = runtime
        self.ledger = runtime.ledger

    def train_round(self, rnd: int) -> dict[str, float]:
        self.runtime.begin_round(rnd)
        observe(self.server, self.runtime)
        return self.server.run_round(self.runtime, rnd)

    def evaluate(self, split: str = "test") -> dict[str, float]:
        return self.server.evaluate(self.runtime, split)

    def state_dict(self) -> dict[str, Any]:
        return {"server": self.server.state_dict(), "ledger": self.ledger.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.server.load_state_dict(state["server"])
        self.ledger.load_state_dict(state["ledger"])

    def privacy(self) -> PrivacyReport | None:
        return privacy_report_of(self.server)


def attach_oracle(server: ServerLogic, spec: AlgorithmSpec, cfg: RunConfig, dataset: str,
                  data_dir: str, max_users: int, meta: dict[str, Any]) -> None:
    """The experimenter's oracle (module docstring): load the dataset from ``data_dir``, build
    the algorithm's instruments from it, hand them to ``server``; the dataset is not kept."""
    assert spec.instruments is not None
    ds = load_sliced(dataset, data_dir, max_users or None)
    if public_meta(ds) != {k: v for k, v in meta.items() if k != FACTS}:  # the job's facts aside
        raise ConfigError(f"the experimenter's data in {data_dir} is not the SuperNodes' "
                          f"dataset ({public_meta(ds)} != {meta})")
    server.attach_instruments(spec.instruments(cfg, ds))


def run_server(grid: Any, rc: dict[str, Any]) -> dict[str, Any]:
    torch.set_num_threads(1)
    out = Path(str(rc["out-dir"]))
    # A write that fails here (a full disk) is one line in error.txt, which deploy reports.
    with writing("the ServerApp's log", out / "server.log"):
        out.mkdir(parents=True, exist_ok=True)
        logf = (out / "server.log").open("a")

    def log(msg: str) -> None:
        with writing("the ServerApp's log", out / "server.log"):
            logf.write(f"{time.strftime('%H:%M:%S')} {msg}\n")
            logf.flush()

    algorithm, dataset = str(rc["algorithm"]), str(rc["dataset"])
    spec, cfg = resolve(algorithm, dataset, None, decode_config(str(rc["config"])))
    rt = FlowerRuntime(
        grid, seed=cfg.seed, expected_nodes=int(rc["num-nodes"]),
        connect_timeout=float(rc["connect-timeout"]), call_timeout=float(rc["call-timeout"]),
        straggler_timeout=float(rc["straggler-timeout"]), log=log)
    t0 = time.perf_counter()
    rt.connect()
    setup_s = time.perf_counter() - t0
    assert rt.meta is not None and spec.build_job is not None
    seed_everything(cfg.seed)
    job = spec.build_job(cfg, metadata_dataset(rt.meta, rt.client_ids), torch.device("cpu"))
    rt.adopt_clients(job.client_ids)  # the parties the job declares, in its order
    trainer = FlowerTrainer(job.server, rt)
    del job  # only the server logic lives here
    oracle_dir = str(rc.get("experimenter-oracle-dir", ""))
    if oracle_dir and spec.instruments is not None:
        attach_oracle(trainer.server, spec, cfg, dataset, oracle_dir,
                      int(rc.get("max-users", 0)), rt.meta)
        log(f"experimenter's oracle loaded from {oracle_dir} (metrics only)")
    progress = out / "progress.jsonl"

    def on_round(row: dict[str, Any]) -> None:
        row = dict(row, wire_sent=rt.wire.sent[row["round"]],
                   wire_received=rt.wire.received[row["round"]], dead_nodes=len(rt.dead))
        with writing("the deployment's progress", progress), progress.open("a") as f:
            f.write(json.dumps(row, default=float) + "\n")
        log(f"round {row['round']} done in {row['time_s']:.1f} s")

    result = run_rounds(trainer, cfg, RunResult(algorithm, dataset, to_dict(cfg)),
                        on_round=on_round)
    data = result.to_json()
    data["engine"] = {
        "name": "flower", "setup_s": setup_s, "wire": rt.wire.to_dict(),
        "nodes": len(set(rt.node_of.values())), "dead_nodes": sorted(rt.dead),
        "clients": len(rt.client_ids), "errors": rt.errors,
        "experimenter_oracle": bool(oracle_dir and spec.instruments is not None),
    }
    write_atomic(out / "results.json", json.dumps(data, indent=2, default=float),
                 "the deployment's results")
    log("done")
    return data


def _make_server_app():
    from flwr.app import Context
    from flwr.serverapp import Grid, ServerApp

    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        rc = dict(context.run_config)
        try:
            run_server(grid, rc)
        except BaseException:
            out = Path(str(rc["out-dir"]))
            out.mkdir(parents=True, exist_ok=True)
            # Whole or not at all: deploy reads it as soon as it exists.
            tmp = out / "error.txt.tmp"
            tmp.write_text(traceback.format_exc())
            tmp.replace(out / "error.txt")
            raise

    return app


server_app = _make_server_app()
