"""Issue item 8: the malicious view of FL-MV-DSSM's threat model, measured
(:mod:`fedrec.attacks.malicious_view`).

:func:`malicious_view_attack` runs ``rounds`` rounds in which view ``malicious`` of every device
sends null item updates and reads the other view's update from its device's local aggregate
(the plain sum across devices, so that the aggregate is readable: see the attack's module), and
reports the recovery's cosine and label AUC next to the epsilon the Gaussian mechanism gives
each view for those rounds and for the paper's ``T = 100``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.base import FederatedJob, FederatedTrainer
from fedrec.algorithms.methods.fl_mv_dssm import build_job_from_multiview
from fedrec.algorithms.methods.fl_mv_dssm.config import FLMVDSSMConfig
from fedrec.algorithms.methods.fl_mv_dssm.server import gaussian_epsilon
from fedrec.algorithms.methods.fl_mv_dssm.steps import LOCAL_AGGREGATE, VIEW_TRAIN
from fedrec.algorithms.methods.fl_mv_dssm.view import VIEW, view_id
from fedrec.attacks.malicious_view import MaliciousViewAttack, NullUpdates
from fedrec.data.multiview import MultiViewData
from fedrec.errors import ConfigError
from fedrec.federation.message import CLIENT
from fedrec.federation.runtime import cohort_size
from fedrec.federation.secrets import ClientSecrets
from fedrec.models import dssm


def malicious_view_attack(cfg: FLMVDSSMConfig, mv: MultiViewData, malicious: str,
                          rounds: int = 1,
                          secrets: ClientSecrets | None = None) -> dict[str, Any]:
    """The attack's summary and epsilon after ``rounds`` rounds of ``cfg`` (module doc)."""
    if len(cfg.views) != 2 or malicious not in cfg.views:
        raise ConfigError(f"the malicious-view attack needs two views, one of them "
                          f"{malicious!r}; got {list(cfg.views)}")
    if cfg.secure_aggregation:
        raise ConfigError("the malicious-view attack reads the plain upload: set "
                          "secure_aggregation=false")
    innocent = next(v for v in cfg.views if v != malicious)
    job = build_job_from_multiview(cfg, mv)
    views = [p for p in job.parties if p.role == VIEW]
    wrapper = NullUpdates(views[0].logic, {view_id(int(p.id.split("/")[1]), malicious)
                                           for p in views}, VIEW_TRAIN, "item")
    job = FederatedJob(server=job.server, parties=[dataclasses.replace(p, logic=wrapper)
                                                   if p.role == VIEW else p
                                                   for p in job.parties])
    devices = [p for p in job.parties if p.role == CLIENT]
    server = job.server
    layout = server.layout
    size = server.upload_size
    n_devices = cohort_size(cfg.clients_per_round, len(devices))
    encoder = cfg.sum_config(size, n_devices).encoder
    w1 = dssm.param_shapes(mv.item_features.shape[1], cfg.widths)["w1"]
    attack = MaliciousViewAttack(
        pairs={p.id: (view_id(p.id, malicious), view_id(p.id, innocent)) for p in devices},
        update_step=VIEW_TRAIN, key="item", aggregate_step=LOCAL_AGGREGATE,
        decode=lambda payload: encoder.decode(payload["x"]), item_size=layout["item"],
        sample_size=cfg.sampled_views, item_features=mv.item_features,
        first_layer=(int(w1[0]), int(w1[1])),
        labels={p.id: p.data.train_items for p in devices})
    trainer = FederatedTrainer(job, cfg, torch.device("cpu"), secrets)
    trainer.runtime.observers.append(attack)
    for rnd in range(1, rounds + 1):
        trainer.train_round(rnd)
    sigma = cfg.noise_multiplier
    return {"malicious": malicious, "innocent": innocent, "noise_multiplier": sigma,
            "clip": cfg.clip, "rounds": rounds, **attack.summary(),
            "epsilon_rounds": gaussian_epsilon([(sigma, rounds)], cfg.delta) if sigma > 0
            else float("inf"),
            "epsilon_T100": gaussian_epsilon([(sigma, 100)], cfg.delta) if sigma > 0
            else float("inf"), "delta": cfg.delta,
            "label_auc_per_device": np.array([r["label_auc"] for r in attack.results])}


#: The columns of :func:`attack_table_rows`' rows, in the order :func:`attack_table_markdown`
#: prints them.
ATTACK_TABLE_HEADERS = ("sigma", "C", "attacked (round, device)", "cosine mean", "cosine min",
                        "label AUC", "epsilon (R round(s))", "epsilon (T = 100)")


def attack_table_rows(mv: MultiViewData, config_of: Any, sigmas: Sequence[float],
                      devices: int, rounds: int = 1, malicious: str = "demographics",
                      secret: bytes = bytes(32)) -> list[dict[str, Any]]:
    """:func:`malicious_view_attack` for each noise multiplier in ``sigmas``, ``devices``
    devices a round and the plain sum, each from fresh secrets of key ``secret`` (so a row does
    not depend on the rows before it); ``config_of(overrides)`` resolves the run's config."""
    out = []
    for sigma in sigmas:
        cfg = config_of({"noise_multiplier": sigma, "secure_aggregation": False,
                         "clients_per_round": devices})
        out.append(malicious_view_attack(cfg, mv, malicious, rounds,
                                         ClientSecrets(secret)))
    return out


def attack_table_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """``rows`` of :func:`attack_table_rows` as a markdown table."""
    rounds = rows[0]["rounds"] if rows else 1
    head = [h.replace("R round", f"{rounds} round") for h in ATTACK_TABLE_HEADERS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += [f"| {r['noise_multiplier']:g} | {r['clip']:g} | {r['attacked']:.0f} | "
              f"{r['cosine_mean']:.4f} | {r['cosine_min']:.4f} | {r['label_auc_mean']:.3f} | "
              f"{r['epsilon_rounds']:.2f} | {r['epsilon_T100']:.2f} |" for r in rows]
    return "\n".join(lines) + "\n"
