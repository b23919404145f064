"""feras's baselines on the same host views (issue 17, item 4): isolated hosts (``share=none``)
send the AS nothing and train on their own view only; GraphSAINT-SW (``share=weights``) sends
it the weights every q iterations and no embedding."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.base import FederatedTrainer, evaluate_splits
from fedrec.algorithms.methods.feras import build_feras_job, host_id
from fedrec.algorithms.methods.feras import model as feras_model
from fedrec.data import assign_private_nodes
from fedrec.errors import ConfigError
from fedrec.federation.message import AGGREGATOR, SERVER, Message
from fedrec.federation.secrets import ClientSecrets

CPU = torch.device("cpu")
pytestmark = pytest.mark.usefixtures("single_thread")
HOSTS = 4
SMALL = {"num_hosts": HOSTS, "private_fraction": 0.5, "presample": 20,
         "iterations_per_round": 2, "weight_every": 2}


def run_round(ds, **overrides) -> tuple[FederatedTrainer, list[Message], dict]:
    cfg = resolve_config("feras", "cora", overrides={**SMALL, **overrides})
    tr = FederatedTrainer(build_feras_job(cfg, ds, CPU), cfg, CPU, ClientSecrets(bytes(32)))
    seen: list[Message] = []
    tr.runtime.observers.append(seen.append)
    tr.train_round(1)
    return tr, seen, evaluate_splits(tr)


def params(tr: FederatedTrainer, h: int) -> dict[str, torch.Tensor]:
    return tr.runtime.states[host_id(h)]["params"]


def host0_private_flipped(cora):
    owner = assign_private_nodes(cora.num_nodes, HOSTS, 0.5, 0)
    x = np.array(cora.x, copy=True)
    x[owner == 0] = 1 - x[owner == 0]
    return dataclasses.replace(cora, x=x)


def test_isolated_hosts_send_the_as_nothing_and_learn_from_their_own_view_only(cora) -> None:
    base, seen, metrics = run_round(cora, share="none")
    assert not [m for m in seen if AGGREGATOR in (m.sender, m.receiver)]
    assert metrics["eval_clients"] == HOSTS and 0.0 < metrics["accuracy"] <= 1.0
    changed, _, _ = run_round(host0_private_flipped(cora), share="none")
    assert not torch.equal(params(base, 0)["w1"], params(changed, 0)["w1"])  # it can fail
    for h in range(1, HOSTS):
        for k in feras_model.PARAM_NAMES:
            assert torch.equal(params(base, h)[k], params(changed, h)[k]), (h, k)
    # No two hosts hold the same weights: nothing was averaged.
    assert not torch.equal(params(base, 0)["w1"], params(base, 1)["w1"])


def test_weight_sharing_sends_the_as_only_weights_and_every_host_takes_their_mean(cora) -> None:
    tr, seen, metrics = run_round(cora, share="weights")
    to_as = [m for m in seen if m.receiver == AGGREGATOR and m.sender != SERVER]
    assert len(to_as) == HOSTS  # iteration 2 of 2: one weight upload per host
    assert all(set(m.payload) == set(feras_model.PARAM_NAMES) for m in to_as)
    mean = torch.stack([torch.as_tensor(m.payload["w1"]) for m in to_as]).mean(0)
    for h in range(HOSTS):
        assert torch.equal(params(tr, h)["w1"], mean)
    assert metrics["eval_clients"] == HOSTS
    assert tr.job.server.privacy_report()["leakage"].startswith(
        "the aggregation server sees each host's weights every q")


def test_an_unknown_sharing_is_a_one_line_config_error() -> None:
    with pytest.raises(ConfigError, match="share must be one of embeddings\\+weights, "
                                          "weights, none") as err:
        resolve_config("feras", "cora", overrides={"share": "gradients"})
    assert "\n" not in str(err.value)
