"""Which view ranks? A finished FL-MV-DSSM run's test and validation metrics with its views
combined with weight ``w`` on the demographics view instead of Algorithm 2's plain sum
(docs/fl-mv-dssm.md, "Table III over 3 seeds"). ``--combine probabilities`` ranks by
``w * P_demographics + P_svd`` (Section IV-C's reading: the views' probabilities are
aggregated); ``--combine user-vectors`` ranks by the cosine of ``w * y_demographics + y_svd``
with each item's vector (Section IV-B's reading: the user output ``y_U`` is aggregated from
the views' user sub-models and compared with every ``y_I``); ``user-vectors-normalised`` adds
the views' unit vectors, i.e. ranks by ``w cos(y_demographics, y_I) + cos(y_svd, y_I)``.

    FEDREC_DATA=../shared/datasets python bench/fl_mv_dssm_views.py \
        results/fl-mv-dssm/runs/variant/fl-mv-dssm/noise-off/seed-0 --weights 1,0.5,0

Loads the run's last checkpoint (the models after its last round, with the run's own client
secret, which the checkpoint holds) and evaluates it once per weight ``w``; ``w = 1`` is the
run's own ranking, ``w = 0`` the SVD view's model alone. A diagnostic: the weight is not a
protocol option, and choosing it would have to use validation only.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from fedrec.algorithms import get_algorithm, resolve_config
from fedrec.algorithms.base import evaluate_splits
from fedrec.algorithms.methods.fl_mv_dssm.device import DeviceLogic
from fedrec.algorithms.methods.fl_mv_dssm.steps import EVALUATE, VIEW_PREDICT
from fedrec.algorithms.methods.fl_mv_dssm.view import ViewLogic
from fedrec.algorithms.mf_common import requested_split
from fedrec.algorithms.multiview_common import device_ranking_metrics
from fedrec.data import load_dataset
from fedrec.federation.runtime import PartyContext, Routed
from fedrec.federation.secrets import ClientSecrets
from fedrec.federation.steps import step
from fedrec.models import dssm

#: The protocol's view step, wrapped by :func:`predict_with_vectors`.
ORIGINAL_PREDICT = ViewLogic.predict


COMBINATIONS = ("probabilities", "user-vectors", "user-vectors-normalised")


def predict_with_vectors(self: ViewLogic, ctxs: Sequence[PartyContext],
                         payload: dict[str, Any]) -> list[Routed]:
    """``ViewLogic.predict`` that also sends the view's user vector and the item vectors (a
    diagnostic: the protocol sends only the probabilities)."""
    routed = ORIGINAL_PREDICT(self, ctxs, payload)
    with torch.no_grad():
        y_items = dssm.tower(self._item_model(payload), self.items)
        for r, c in zip(routed, ctxs, strict=True):
            x_user = torch.from_numpy(np.asarray(c.data.features, dtype=np.float32))
            for msg in r.to.values():
                msg["y"] = dssm.tower(self._user_model(c, payload), x_user)
                msg["y_items"] = y_items
    return routed


def combined_scores(got: dict[str, dict[str, Any]], weight: float,
                    combine: str) -> torch.Tensor:
    """The device's ranking scores from its views' messages."""
    if combine == "probabilities":
        return (weight * torch.as_tensor(got["demographics"]["probs"]).double()
                + torch.as_tensor(got["svd"]["probs"]).double())
    demo, svd = got["demographics"]["y"].double(), got["svd"]["y"].double()
    if combine == "user-vectors-normalised":
        demo, svd = demo / demo.norm().clamp_min(1e-12), svd / svd.norm().clamp_min(1e-12)
    return dssm.relevance(weight * demo + svd, got["svd"]["y_items"].double())


def weighted_evaluate(weight: float, combine: str) -> Any:
    """``DeviceLogic.evaluate`` ranking by :func:`combined_scores`."""

    @step(EVALUATE, cohort=True, broadcast=True)
    def evaluate(self: DeviceLogic, ctxs: Sequence[PartyContext],
                 payload: dict[str, Any]) -> list[dict[str, Any]]:
        split = requested_split(payload)
        out = []
        for c in ctxs:
            got = self._from_views(c, VIEW_PREDICT)
            scores = combined_scores(got, weight, combine)
            items = {s: getattr(c.data, f"{s}_items") for s in ("train", "valid", "test")}
            out.append(device_ranking_metrics(scores, items, split, self.num_items,
                                              self.cfg.topk))
        return out

    return evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a finished fl-mv-dssm run's folder (with checkpoint.pt)")
    parser.add_argument("--weights", default="1,0.5,0", help="comma-separated w")
    parser.add_argument("--combine", default="probabilities", choices=COMBINATIONS)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ckpt = torch.load(f"{args.run}/checkpoint.pt", weights_only=False, map_location="cpu")
    made = ckpt["made_from"]
    cfg = resolve_config("fl-mv-dssm", made["dataset"], overrides=made["config"])
    if sorted(cfg.views) != ["demographics", "svd"]:
        raise SystemExit(f"error: the run has views {cfg.views}, not demographics and svd")
    ds = load_dataset(made["dataset"], args.data_dir)
    secrets = ClientSecrets(ckpt["trainer"]["runtime"]["client_secret"])
    trainer = get_algorithm("fl-mv-dssm").trainer(cfg, ds, torch.device("cpu"), secrets)
    trainer.load_state_dict(ckpt["trainer"])
    if args.combine != "probabilities":
        ViewLogic.predict = step(VIEW_PREDICT, cohort=True, broadcast=True)(  # type: ignore
            predict_with_vectors)
    for weight in (float(w) for w in args.weights.split(",")):
        DeviceLogic.evaluate = weighted_evaluate(weight, args.combine)  # type: ignore
        metrics = evaluate_splits(trainer)
        shown = {k: round(v, 4) for k, v in metrics.items()
                 if k.endswith(("Recall@10", "Precision@10", "AUC"))}
        print(f"{args.combine}, w = {weight}: {shown}", flush=True)


if __name__ == "__main__":
    main()
