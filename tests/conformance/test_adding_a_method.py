"""``docs/adding-a-method.md``, followed: a minimal method (FedAvg over matrix factorisation:
each client refines the item table on its own ratings, the server averages the tables), written
here as a new contributor would write its package, passes the whole conformance suite with no
test code of its own -- it is registered, and the suite's checks run on it by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

from fedrec.algorithms import ALGORITHMS, AlgorithmSpec, method_index
from fedrec.algorithms.base import RATING_EVALUATION, FederatedJob, ServerLogic
from fedrec.algorithms.index import MethodInfo
from fedrec.algorithms.mf_common import eval_request, requested_split
from fedrec.config import RunConfig, check_range, option
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.data import RatingDataset, partition_by_user
from fedrec.federation.aggregation import fedavg
from fedrec.federation.runtime import PartyContext, PartyLogic, Runtime, declare_parties
from fedrec.federation.steps import step
from fedrec.privacy.report import NoGuarantee, PrivacyReport

from . import (
    test_dp,
    test_flower,
    test_no_update,
    test_privacy_boundary,
    test_privacy_report,
    test_public_meta,
    test_resume,
)

NAME = "fedavg-mf-example"

# -- meta.py ---------------------------------------------------------------------------------

METHOD = MethodInfo(name=NAME, summary="FedAvg of an MF item table (a test's example)",
                    paper="none: docs/adding-a-method.md's example", dataset_kinds=("rating",),
                    federated=True)

# -- config.py -------------------------------------------------------------------------------


@dataclass
class FedAvgMFConfig(RunConfig):
    rounds: int = option(10)
    dim: int = option(8, "latent factors")
    lr: float = option(0.05, "clients' SGD learning rate")
    local_steps: int = option(2, "SGD passes over a client's ratings per round")

    def validate(self) -> None:
        super().validate()
        check_range("dim", self.dim, 1)


# -- steps.py --------------------------------------------------------------------------------

TRAIN = "train"
EVALUATE = "evaluate"

# -- client.py -------------------------------------------------------------------------------


class MFClient(PartyLogic):
    def __init__(self, cfg: FedAvgMFConfig) -> None:
        self.cfg = cfg

    def init_state(self, party: Any, data: Any, secret: Any) -> dict[str, Any]:
        # The user's factor never leaves the device; drawn from the client's own secret.
        return {"p": torch.randn(self.cfg.dim, generator=secret.generator("init")) * 0.1}

    @step(TRAIN, broadcast=True)
    def train(self, ctx: PartyContext, payload: Payload) -> Payload:
        q = torch.as_tensor(payload["q"]).clone()
        p = ctx.state["p"]
        items = torch.tensor(ctx.data.train_items, dtype=torch.int64)
        ratings = torch.tensor(ctx.data.train_values, dtype=torch.float32)
        for _ in range(self.cfg.local_steps):
            err = (q[items] @ p) - ratings
            grad_p = (err[:, None] * q[items]).mean(0)
            q.index_add_(0, items, -self.cfg.lr * err[:, None] * p[None, :])
            p = p - self.cfg.lr * grad_p
        ctx.state["p"] = p
        return {"q": q, "n": len(items)}

    @step(EVALUATE, broadcast=True)
    def evaluate(self, ctx: PartyContext, payload: Payload) -> Payload:
        split = requested_split(payload)
        items = torch.tensor(getattr(ctx.data, f"{split}_items"), dtype=torch.int64)
        target = torch.tensor(getattr(ctx.data, f"{split}_values"), dtype=torch.float64)
        pred = (torch.as_tensor(payload["q"])[items] @ ctx.state["p"]).double()
        err = pred - target
        return {"sq_err": float((err ** 2).sum()), "abs_err": float(err.abs().sum()),
                "count": len(items)}


# -- server.py -------------------------------------------------------------------------------


class MFServer(ServerLogic):
    def __init__(self, cfg: FedAvgMFConfig, num_items: int) -> None:
        self.cfg = cfg
        self.q = torch.randn(num_items, cfg.dim, generator=torch_generator(cfg.seed, "q")) * 0.1

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        cohort = rt.cohort(self.cfg.clients_per_round)
        replies = rt.updates(rt.broadcast(TRAIN, cohort, {"q": self.q}), TRAIN)
        self.q = fedavg(list(replies.values()), ["q"])["q"]
        return {"clients": float(len(replies))}

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        replies = rt.updates(rt.broadcast(EVALUATE, rt.client_ids,
                                          eval_request({"q": self.q}, split)), EVALUATE)
        count = sum(int(r["count"]) for r in replies.values())
        sq = sum(float(r["sq_err"]) for r in replies.values())
        return {"rmse": float(np.sqrt(sq / max(count, 1)))}

    def receives(self) -> dict[str, str]:
        return {TRAIN: "each cohort client's locally refined item table, in clear",
                EVALUATE: RATING_EVALUATION}

    def privacy(self) -> PrivacyReport:
        return PrivacyReport((NoGuarantee(
            "user factors stay on the device",
            "each client's refined item table reveals its rated items"),))

    def state_dict(self) -> dict[str, Any]:
        return {"q": self.q.clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.q = state["q"].clone()


# -- __init__.py -----------------------------------------------------------------------------


def build_job(cfg: FedAvgMFConfig, ds: RatingDataset, device: torch.device) -> FederatedJob:
    parties = declare_parties(partition_by_user(ds), MFClient(cfg))
    return FederatedJob(MFServer(cfg, ds.num_items), parties=parties)


SPEC = AlgorithmSpec.of(METHOD, config_cls=FedAvgMFConfig, build_job=build_job)

# -- the suite, on it --------------------------------------------------------------------------


@pytest.fixture
def registered(monkeypatch):
    """The example in the index and the registry, as its package in
    ``fedrec.algorithms.methods`` would be (its ``meta.py`` and its ``__init__.py``)."""
    monkeypatch.setitem(method_index(), NAME, METHOD)
    monkeypatch.setitem(ALGORITHMS, NAME, SPEC)


@pytest.mark.usefixtures("registered", "single_thread")
def test_a_minimal_method_passes_the_conformance_suite(data_root, tmp_path, capsys,
                                                       load_once) -> None:
    from fedrec.cli.main import main

    assert main(["algorithms"]) == 0
    assert METHOD.line() in capsys.readouterr().out.splitlines()
    test_privacy_boundary.test_changing_one_partys_data_changes_only_its_messages(
        NAME, 0.3, {}, data_root)
    test_public_meta.test_the_server_builds_from_public_metadata(NAME, data_root)
    test_resume.test_resume_equals_the_uninterrupted_run(NAME, {}, data_root,
                                                         tmp_path / "resume")
    for how in ("dropped", "rejected"):
        test_no_update.test_a_round_without_updates_stops_with_the_runtimes_error(
            NAME, how, data_root)
    test_privacy_report.test_the_report_names_every_message_the_server_receives(NAME, data_root)
    with pytest.raises(pytest.skip.Exception, match="no DP aggregate"):
        test_dp.test_a_dp_run_sends_the_server_no_clear_value(NAME, data_root)
    pytest.importorskip("flwr")
    test_flower.test_flower_equals_the_simulator(NAME, data_root, tmp_path / "flower", load_once)
