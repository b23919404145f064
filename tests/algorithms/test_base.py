"""fedrec.algorithms.base: what a registry entry is."""

from __future__ import annotations

import pytest
import torch

from fedrec.algorithms import ALGORITHMS
from fedrec.algorithms.base import AlgorithmSpec, CentralizedTrainer, FederatedTrainer
from fedrec.algorithms.index import MethodInfo
from fedrec.algorithms.methods.fcf import FCFConfig, build_fcf_job
from fedrec.config import build_config
from fedrec.engines.common import slice_users


def _spec(**builders):
    return AlgorithmSpec(name="x", summary="", paper="", config_cls=FCFConfig,
                         dataset_kinds=("rating",), **builders)


def _central(cfg, ds, device):
    return CentralizedTrainer()


def test_a_spec_builds_a_trainer_or_a_job_exactly_one():
    with pytest.raises(TypeError, match="exactly one"):
        _spec()
    with pytest.raises(TypeError, match="exactly one"):
        _spec(build=_central, build_job=build_fcf_job)
    assert _spec(build_job=build_fcf_job).federated
    assert not _spec(build=_central).federated


def test_a_spec_of_a_method_info_takes_its_description_and_must_agree_on_federated():
    info = MethodInfo("x", "a summary", "a paper", ("rating",), federated=True)
    spec = AlgorithmSpec.of(info, config_cls=FCFConfig, build_job=build_fcf_job)
    assert (spec.name, spec.summary, spec.paper, spec.dataset_kinds) == (
        "x", "a summary", "a paper", ("rating",))
    assert spec.info == info
    with pytest.raises(TypeError, match=r"its MethodInfo says federated=True, its spec gives "
                                        r"build$"):
        AlgorithmSpec.of(info, config_cls=FCFConfig, build=_central)


def test_a_federated_spec_runs_its_job_in_the_simulator(ml100k):
    cfg = build_config(FCFConfig, "fcf", "ml-100k", overrides={"rounds": 1})
    trainer = ALGORITHMS["fcf"].trainer(cfg, slice_users(ml100k, 5), torch.device("cpu"))
    assert isinstance(trainer, FederatedTrainer) and len(trainer.job.client_ids) == 5
    federated = {name for name, spec in ALGORITHMS.items() if spec.federated}
    assert {"fcf", "fedgnn", "ptf-fedrec", "fedgrec", "feras", "fl-mv-dssm"} <= federated
    assert not {"pmf", "lightgcn", "gcn-central", "saint-central"} & federated
