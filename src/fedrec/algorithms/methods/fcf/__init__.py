"""FCF: federated collaborative filtering (Ammad-ud-din et al., 2019).

User factors never leave the device; the server holds the item factors. One round:

1. ``train`` (server -> selected clients): the current item factors ``Q`` (and item biases for
   explicit ratings).
2. Each client takes ``local_steps`` gradient steps on its own user factor ``p_u`` (and bias)
   with ``Q`` fixed, then computes the gradient of its loss with respect to the item rows it
   touched (its rated items; for implicit feedback, its positives and sampled negatives) and
   uploads ``(item ids, gradient rows, loss)``.
3. The server sums the gradients and takes one Adam step on ``Q``.

The client step (:mod:`fedrec.algorithms.item_gradient`, which FedMF shares) takes gradient
steps on the user side where the original FCF takes an ALS step, so that one code path serves
explicit ratings (MSE) and implicit feedback (BPR; ``implicit: per-user`` trains BPR on a rating
dataset's ratings as implicit positives, on the split of lightgcn, PTF-FedRec and FedGRec).

What the server learns: the uploaded rows name the items each client touched (for explicit
ratings, exactly the rated items). FCF has no defence against this; FedGNN's pseudo items and
LDP (:mod:`fedrec.algorithms.methods.fedgnn`) exist because of it.

``dp: distributed | central`` (:mod:`fedrec.federation.dp_sum`, beyond the paper): a client's
round vector is its gradient dense over all items (factors then biases), clipped in L2 to
``dp_clip``; the cohort is a Poisson sample; the server takes its Adam step on the noised sum
divided by the expected cohort size. Distributed: Skellam noise from the clients inside the
secure sum, user-level DP against the server. The training loss is never sent, and evaluation
replies go to the experimenter.

``secure_aggregation: true`` closes that channel against an honest-but-curious server: each
client's upload becomes its gradient *dense over all items* (factors then biases, so that the
shape reveals nothing), fixed-point encoded, and the cohort's uploads are summed with Bonawitz
et al.'s secure aggregation (:mod:`fedrec.federation.secure_sum`): the ``train`` step ends by
advertising the client's keys, then ``secagg_share`` / ``secagg_mask`` / ``secagg_unmask``.
The server receives only public keys, encrypted shares, masked vectors (uniform in
Z_{2^secagg_bits}) and the sum; it learns the cohort's summed gradient and who survived, nothing
about any one client, as long as fewer than ``t = ceil(secagg_threshold · n)`` clients collude
with it. Clients that drop after sharing keys are left out of the sum and their masks removed;
fewer than ``t`` survivors abort the round. The model then equals plain FCF's up to the
fixed-point rounding (per coordinate and client at most ``0.5 · secagg_clip · n /
(2^(secagg_bits-1) - 1)``) and clipping to ``[-secagg_clip, secagg_clip]``. Costs: dense
uploads, three more round trips, ``O(n)`` mask expansions per client. ``secagg_variant:
secagg+`` runs SecAgg+ instead (Bell et al. 2020): ``O(log n)`` mask expansions per client on a
random graph sized for ``secagg_corrupt`` colluding and ``secagg_dropout`` dropping clients,
the same sum (:mod:`fedrec.federation.secure_sum`).

Design notes: ``docs/fcf.md``.
"""

from __future__ import annotations

import torch

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob
from fedrec.algorithms.contract import Contract
from fedrec.algorithms.methods.fcf.client import FCFClient
from fedrec.algorithms.methods.fcf.config import FCFConfig
from fedrec.algorithms.methods.fcf.meta import METHOD
from fedrec.algorithms.methods.fcf.poisoning import fcf_item_table
from fedrec.algorithms.methods.fcf.server import FCFServer
from fedrec.data.implicit import as_implicit
from fedrec.data.partition import partition_by_user
from fedrec.data.types import Dataset, InteractionDataset, RatingDataset
from fedrec.federation.runtime import declare_parties


def build_fcf_job(cfg: FCFConfig, dataset: Dataset, device: torch.device) -> FederatedJob:
    dataset = as_implicit(dataset, cfg.implicit)
    explicit = isinstance(dataset, RatingDataset)
    if not explicit and not isinstance(dataset, InteractionDataset):
        raise TypeError("FCF needs a rating or interaction dataset")
    return FederatedJob(
        FCFServer(cfg, dataset.num_items, explicit, device, dataset.num_users),
        parties=declare_parties(partition_by_user(dataset), FCFClient(cfg, dataset)),
    )


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=FCFConfig,
    build_job=build_fcf_job,
    poisoning=fcf_item_table,
    contract=Contract(
        boundary_variants=({"implicit": "per-user"},),
        settings={"dim": 16},
        dp_settings={"dp": "distributed", "noise_multiplier": 1.0, "clients_per_round": 40},
    ),
)

__all__ = ["SPEC", "FCFClient", "FCFConfig", "FCFServer", "build_fcf_job"]
