"""Evaluation on a chosen split: what a ranking excludes and scores on validation and on test,
the same for a model held in one place (SplitRanking) and for clients ranking their own items."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrec.algorithms.mf_common import (
    SplitRanking,
    eval_request,
    evaluate_clients_ranking,
    requested_split,
)
from fedrec.data import ClientData, InteractionDataset, Interactions
from fedrec.federation.runtime import PartyContext


def _one(item: int) -> Interactions:
    return Interactions(np.array([0]), np.array([item]), np.ones(1, np.float32))


# One user, five items: trained on 0, validation item 1, test item 2.
DS = InteractionDataset("toy", 1, 5, train=_one(0), test=_one(2), valid=_one(1))


def _scores(order: list[int]) -> torch.Tensor:
    s = torch.zeros(1, 5)
    s[0, order] = torch.arange(5, 0, -1, dtype=torch.float32)  # first of order scores highest
    return s


def _client_metrics(order: list[int], split: str) -> dict[str, float]:
    data = ClientData(user=0, train_items=np.array([0]), train_values=np.ones(1, np.float32),
                      test_items=np.array([2]), test_values=np.ones(1, np.float32),
                      valid_items=np.array([1]), valid_values=np.ones(1, np.float32),
                      features=None, num_items=5)
    ctx = PartyContext(party=0, data=data, state={}, round=1, step="evaluate", secret=None,
                       role_secret=None)
    # p @ q.T reproduces _scores(order): p = [1], q = the item scores.
    q = _scores(order).T.contiguous()
    (msg,) = evaluate_clients_ranking([ctx], torch.ones(1, 1), q, k=1, split=split)
    return msg


@pytest.mark.parametrize("where", ["central", "client"])
def test_validation_excludes_train_only_and_test_excludes_train_and_validation(where) -> None:
    rank = SplitRanking(DS, (1,))

    def recall(order: list[int], split: str) -> float:
        if where == "central":
            return rank(lambda users: _scores(order)[users], split)["Recall@1"]
        return _client_metrics(order, split)["Recall@1"]

    # Trained item 0 is never recommended: the validation item comes first among the rest.
    assert recall([0, 1, 2, 3, 4], "valid") == 1.0
    # On test the validation item is known too, so the test item comes first.
    assert recall([0, 1, 2, 3, 4], "test") == 1.0
    # Validation does not exclude the test item (excluding it would read the test rows).
    assert recall([0, 2, 1, 3, 4], "valid") == 0.0
    assert recall([3, 1, 2, 0, 4], "valid") == 0.0


def test_a_split_without_rows_gives_no_metrics() -> None:
    ds = InteractionDataset("toy", 1, 5, train=_one(0), test=_one(2))
    assert SplitRanking(ds, (1,))(lambda users: _scores([0, 1, 2, 3, 4])[users], "valid") == {}


def test_the_split_travels_in_the_request() -> None:
    msg = eval_request({"model": torch.zeros(2)}, "valid")
    assert requested_split(msg) == "valid" and set(msg) == {"model", "split"}
    with pytest.raises(ValueError, match="split"):
        eval_request({}, "train")
    with pytest.raises(ValueError, match="split"):
        requested_split({"split": "everything"})
