"""FedGNN: federated GNN recommendation with pseudo items, local DP and graph expansion.

Wu et al., "FedGNN: Federated Graph Neural Network for Privacy-Preserving Recommendation",
KDD 2021 (arXiv:2102.04925). Model: :mod:`fedrec.models.gnn`.

Parties: the recommendation server (:class:`FedGNNServer`, holds the GNN weights and the item
embedding table), the clients (:class:`FedGNNClient`, one per user: its ratings, its user
embedding, its neighbour embeddings) and the third-party matcher (:class:`FedGNNThirdParty`,
service ``"third_party"``).

One round (Algorithm 1):

1. ``train`` (server -> |S| sampled clients): the GNN weights and the item embedding table.
2. Each client computes, on its local subgraph, the gradients of its loss w.r.t. the GNN
   weights, its user embedding and the embeddings of its rated items (``local_steps - 1``
   extra steps on the user embedding first). It updates its user embedding locally
   (SGD, ``lr_user``, on the mean loss whatever ``loss_reduction`` is). It samples
   ``M = pseudo_items`` items it has not rated (capped at the number available) and draws
   their gradients from a Gaussian with the mean and covariance of its real item gradients
   (``g_p = mean + Z (G - mean) / sqrt(K - 1)``, ``Z ~ N(0, 1)`` ``(M, K)``, which has
   exactly the sample covariance, also when it is singular). The unified
   gradient (GNN weights, real and pseudo item rows) is clipped in L-infinity to ``clip`` and
   perturbed with ``Laplace(0, laplace)`` per coordinate (Eq. 1); the item ids and rows are
   shuffled together, so the message does not say which rows are real.
3. The server sums the item rows per id and the GNN gradients, divides by ``|S|`` (FedAvg) and
   takes an SGD step (``lr``).

Item privacy without pseudo items (``item_privacy="secure_sum"``; beyond the paper). Pseudo
items hide the rated ids of one upload, but a server that intersects a client's uploads over
rounds finds them (issue 13). In this mode no id ever travels: step 2 ends, instead of the
upload, with the client's input to a Bonawitz et al. secure sum
(:mod:`fedrec.federation.secure_sum`, as FCF's ``secure_aggregation``), and ``secagg_share`` /
``secagg_mask`` / ``secagg_unmask`` follow. The input is one vector, the same length for every
client (:meth:`FedGNNClient.secure_input`):

* ``[GNN-weight gradient, item gradients dense over all items]``: the GNN-weight gradient goes
  through the same sum (it is a function of the private ratings too, and one vector is one
  protocol run); rows of unrated items are 0. It is clipped to ``clip`` (L-infinity) and, with
  LDP on, every coordinate gets ``Lap(laplace)``, the zeros included, before it is masked:
  local DP then holds for the whole vector against anyone, the server included, even if the
  secure sum were broken; the per-vector epsilon counts all ``P + num_items x width``
  coordinates (as many as the largest pseudo-item uploads, more than the mean one). With LDP
  off the clip is still needed: the fixed-point ring holds bounded values only (``clip > 0``
  is required).
* with ``item_avg="uploaders"``, then ``num_items`` more coordinates: the rated-item indicator
  times the ring bound, so the server can divide each item row by its number of raters (it
  cannot count uploaders in a sum otherwise). That block is exact, not noised: it is protected
  by the secure sum only. ``item_avg="cohort"`` sends no counts.

The ring bound is ``secagg_clip``, by default ``clip`` without noise and ``clip + 20 laplace``
with it (noised coordinates beyond it are clipped: post-processing, so the DP guarantee is
unchanged, and ``P(|Lap| > 20 laplace) = 2e-9``). The server decodes the sum of the ``m``
survivors within ``m 0.5 / scale`` per coordinate (``scale = floor((2^(bits-1) - 1) / |S|) /
bound``), then averages as in step 3 (``/ m`` or ``/ raters``). ``pseudo_items`` is ignored
(positions reveal nothing, so there is nothing to hide among), and the training loss is not
reported (it would be an individual value). Guarantee (honest-but-curious server, fewer than
``t = ceil(secagg_threshold |S|)`` colluding clients): the server learns each round's cohort
sum and who survived, nothing about one client's vector; clients dropping after sharing keys
are left out, fewer than ``t`` survivors abort the run. Cost: dense uploads (4 bytes a
coordinate at 32 bits: ~0.47 MB per client on ML-100K, dim 64), three more round trips, and per
client ``2 |S|`` X25519 agreements and ``|S|`` AES-CTR expansions of the vector.

Measured (``results/fedgnn-secure-sum.md``; ML-100K, seed 0, 160 rounds of 128 clients,
``fedrec run fedgnn --dataset ml-100k --threads 1 --set rounds=160 --set eval_every=8 --set
init_std=0.1 --set lr_decay=0.92`` plus the settings named): with LDP (``--set item_avg=cohort
--set item_privacy=secure_sum``) RMSE 0.9734, against 0.9700 for the paper's 1000 pseudo items
(no further settings); without noise (``--set laplace=0.0 --set item_privacy=secure_sum``) the
run follows the paper's mode without pseudo items up to the fixed-point rounding (RMSE after
160 rounds 0.93501 against 0.93500). Uploads 61.6 MiB per round against 39.6 MiB with pseudo items;
about 15 s per round against 0.8 s on the 2 shared cores, nearly all of it the secure sum.

Graph expansion (Algorithm 2), once, at the start of the first round after ``expand_after``
epochs (an epoch = ``ceil(num_clients / clients_per_round)`` rounds):

1. ``expand_key`` (server -> every client): a fresh 32-byte key. The paper uses homomorphic
   encryption of item ids; we use deterministic keyed tokens
   (:class:`fedrec.privacy.ItemTokenizer`, AES under the key), which is what the matching needs.
2. Each client sends ``(tokens of its rated items, its user embedding)`` to the third party
   (a :class:`~fedrec.federation.runtime.Routed` message; the server never sees it).
3. ``expand_match`` (server -> third party, empty payload): the third party matches equal
   tokens and sends each client (Routed) up to ``neighbours`` embeddings of other users per
   token, aligned with the order of the tokens that client sent: no user ids, no item ids.
4. ``expand_install`` (server -> every client, empty payload): clients read their inbox and keep
   the neighbour embeddings fixed. With ``trainable_neighbours`` the exchange is repeated every
   round, so that neighbour embeddings follow their owners' training: the paper's "fully
   trainable" neighbours, "updated in each iteration" (its Fig. 4 variant, which
   ``fedrec reproduce fedgnn`` runs from the start: ``expand_after: 0``). An embedding is
   still trained only by its owner, on its own ratings: no gradient crosses to another user.

Privacy accounting (:meth:`FedGNNServer.privacy_report`, which states the guarantee): each
upload is ``clip_linf(g, δ) + Lap(λ)^d`` over its ``d`` coordinates, i.e. one Laplace mechanism
with L1 sensitivity ``2δd`` (noise multiplier ``λ / (2δd)``; see
:func:`fedrec.privacy.linf_laplace_epsilon`), ``ε = 2δd/λ`` per upload for the largest ``d``
the server received. A client releases one upload per round it takes part in: the server counts
each client's participations, and the report composes the most-participating client's uploads
(:func:`fedrec.privacy.worst_client_accountant`; basic composition, since PLD is not computed at
such per-release ε, see :mod:`fedrec.privacy.accounting`). Per upload that is ``d`` itself
at δ 0.1, λ 0.2: up to 117,715 on ML-100K (``results/fedgnn-ml-100k``), 1.44e7 over the
640-round run: the local DP covers the gradient values in name only. FedGNN's
own figure, ``2δ/λ`` per coordinate, is kept as the labelled secondary
``epsilon_per_coordinate_per_upload``: it does not bound what a client releases. The uploaded
item ids (real ones among pseudo ones) have no formal guarantee; with ``measure_leakage`` the
report gives the F1 of :class:`fedrec.attacks.RatedItemsAttack` run as an observer during the run.
It is off by default, as its guess rules cost more than the training: on ML-100K with the packaged
settings, 1.25 CPU s per round of training against 1.58 for the rules without ``density`` and
2.74 for ``density`` (``python bench/bench_leakage_cost.py``, 4 rounds, one thread).

Vectorisation: the cohort is split into chunks of clients with similar numbers of items
(sorted by K, bounded padded size); per chunk, ``torch.func.vmap(torch.func.grad(...))`` over
padded per-client subgraphs yields every client's own gradient in one call
(:func:`fedrec.models.gnn.cohort_grads`). The per-client post-processing (pseudo items, clipping,
noise) draws from each client's own generator keyed by (its secret, round, step): never by the
public seed, from which the server could replay the shuffle and the noise
(:mod:`fedrec.attacks.seed_replay`).

Settings: the paper's SGD lr 0.01 on the mean loss (``g / |S|`` averaging over the cohort,
items touched by few clients) barely moves in ten epochs; on ML-100K we use the summed loss,
whose gradients then saturate the clip bound (the best signal-to-noise ratio under LDP), with
lr 0.1 (see ``configs/fedgnn.yaml``). Under LDP (δ 0.1, λ 0.2, M 1000), 160 rounds, ML-100K
u1: RMSE 0.983 (lr 0.1) and 1.008 (lr 0.2) with the expansion, 0.981 without it
(``neighbours=0``, lr 0.2), so the expansion did not measurably help here; our guess,
untested, is that the extra weights ``W_nb`` get as much noise as signal.

Later tuning on ML-100K (same privacy settings, 160 rounds, 5 local steps): ``bias``
(user/item rating biases as an extra embedding column), ``item_avg="uploaders"`` (each item row
averaged over the clients that uploaded it, real or pseudo, instead of ``/|S|``) and lr 0.2 with
``lr_decay`` 0.92 per epoch bring RMSE from 0.985 to 0.968. The pseudo items are what limits
it: the same settings with ``pseudo_items=0`` reach 0.948, with ``laplace=0`` (M kept) gain
only ~0.007.

Other datasets (same settings; ratings in units of a quarter of the rating range, see
:func:`rating_unit`; seed 0; these figures with 5 local steps): Flixster 0.944 after 160 rounds
(published FedGNN 0.980); Douban 0.798 / 0.786 / 0.773 after 160 / 320 / 640 rounds (published
0.775; the config uses 640); YahooMusic 28.2 (1..100 scale; GC-MC's published 20.5, no FedGNN
figure).

Local steps: the paper computes one gradient per round; ``local_steps`` > 1 first takes extra
steps on the (private) user embedding. Five steps overfit the user embeddings of the sparse
mgcnn subsets: with one step (the default since), seed 0, Flixster 0.944 -> 0.904, Douban
0.773 -> 0.759, YahooMusic 28.2 -> 21.5, while ML-100K stays where it was (0.968 -> 0.970).
Current figures are in ``results/fedgnn/README.md`` (``fedrec reproduce fedgnn``).

ML-100K's schedule: the noise averages out over more epochs. The settings above over 640 rounds
(80 epochs) with the per-epoch decay stretched to match (0.979, about 0.92^(1/4)) and
``init_std`` 0.05 give 0.948 (2 seeds) against 0.970 after 160 rounds (seed 0 with
``init_std`` 0.1: 0.952 after 640 rounds, 0.954 after 1,280: no gain beyond 640). The price is
privacy: each client uploads about four times as often, and its composed epsilon (see the
accounting above) grows in proportion. Without noise the long schedule
overfits: clipping only (no noise, no pseudo items) gives 0.935 after 160 rounds and 0.969
after 640.

What limits ML-100K is privacy: with one step, clipping but no noise and no pseudo items reaches
0.935, the same GNN trained centrally (``gnn-central``) 0.932. M = 1000
pseudo items are 60% of ML-100K's 1,682 items, and each pseudo row carries its own Laplace
noise: an item row is uploaded by ~83 of the 128 clients of a round (each sends 1,085 rows on
average) while ~7 of them rated it (Fig. 6, 160 rounds: M = 0 / 100 / 500 / 1000 give 0.940 /
0.950 / 0.960 / 0.970, seed 0). The paper's dropout (``feature_dropout`` 0.2) helps the
centralized model (0.939 -> 0.930) but not the federated one under LDP (0.977 after 160 rounds,
0.973 after 240; 5 local steps).

Pseudo items across rounds (``pseudo_set``). The paper samples ``M`` unrated items ("from the
full item set for simulation"; it names displayed items as another choice) and draws their
gradients from a Gaussian with the real gradients' mean and covariance; it does not say whether
the set is drawn once or every round, nor how one round's draws relate to the next, and it
counts on the pseudo gradients being "counteracted after aggregation". A server that keeps
every upload of a client (:mod:`fedrec.attacks.cross_round`) uses whatever changes between
rounds. Measured with the packaged privacy (clip 0.1, Laplace 0.2, M 1000) on ML-100K's first
100 users, 25 a round, 80 rounds, 20 uploads per client (``python
bench/bench_fedgnn_leakage_rounds.py --threads 1 --rounds 80 --max-users 100
--clients-per-round 25``, ``results/fedgnn-leakage-rounds.md``; chance F1 0.054), mean F1 after
5 / 10 / 15 / 20 uploads of a client:

* ``per_round`` (the default up to issue 13): new ids and rows every round. The intersection of a
  client's uploads leaves its real items: 0.37 / 0.84 / 0.98 / 1.00.
* ``fixed``: the ids drawn once per client, the rows every round. The intersection now guesses
  the whole set (0.10 = 2K / (2K + M)), but a real item's rows point the same way round after
  round while fresh pseudo rows average away: row consistency 0.15 / 0.38 / 0.52 / 0.60
  (clipping without noise: 0.46 / 0.64 / 0.68 / 0.73).
* ``fixed_coupled``: the ids and the coefficients ``Z`` kept, so pseudo row ``j`` in round
  ``t`` is ``mean_t + sum_i z_ji (g_i^t - mean_t) / sqrt(K - 1)``: over the draw of ``Z`` the
  pseudo rows' trajectories have the mean and covariance of the real rows' trajectories over
  all rounds together, so no statistic of first and second moments, within a round or across
  rounds, tells them apart. Every row attack stays at chance under LDP (at most 0.065). Without
  noise the rows' shape still shows (real rows are not Gaussian; summed per-upload
  Gaussian-outlier scores: 0.21 over 20 uploads; 0.28-0.29 from the first upload in the three
  modes with Gaussian pseudo rows).
* ``fixed_copy``: the ids kept, each pseudo item copying the row of a fixed real item (each
  real item ``M // K`` or one more times). A real row and its copies are exchangeable to
  anything that reads only rows: every row attack at chance with and without noise (at most
  0.067). With ``M < K`` some real items have no copy, and without noise they stand out.

What holds against none of them: the ids themselves, read with what the server learns from all
clients. Pseudo ids are uniform over a client's unrated items and real ones follow the
catalogue's popularity, so ranking a client's ids by how often anyone uploads them gives 0.13
from the first upload (0.14 over 20) in every mode. Drawing pseudo ids like real ones (the
paper's displayed items) would be the counter; not done.

Accuracy: a pseudo row the server cannot tell from a real one across rounds is, to its model,
a consistent false rating, while fresh pseudo rows average away only because they change.
RMSE on all of ML-100K, 160 rounds (the packaged settings with ``lr_decay`` 0.92; ``fedrec run
fedgnn --dataset ml-100k --set rounds=160 --set eval_every=160 --set lr_decay=0.92 --set
pseudo_set=MODE``, ``results/fedgnn-ml-100k-pseudo-*``): 0.966 per_round, 0.962 fixed,
0.994 fixed_coupled, 1.001 fixed_copy. So the modes that hold against the row attacks cost
0.03-0.04 RMSE here. The default is ``fixed``: the most private mode that keeps the accuracy
(the intersection no longer finds a client's items; row consistency still does, slowly: 0.60
after 20 uploads), chosen on these figures -- measured with the seed-keyed draws of b43ef81,
which differ from today's party-secret draws only in which random numbers are drawn. What
holds against every attack here, at better accuracy, is ``item_privacy: secure_sum`` (beyond
the paper; ``results/fedgnn-secure-sum.md``).

Not done: the third party is trusted to follow the protocol (no defence against a malicious
matcher), and the key is shared with the server.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.base import FederatedJob, FederatedTrainer, ServerLogic
from fedrec.algorithms.mf_common import (
    eval_request,
    rating_unit,
    reduce_client_metrics,
    requested_split,
    scale_midpoint,
)
from fedrec.attacks.rated_items import RatedItemsAttack
from fedrec.config import RunConfig, check_choice, check_range, option
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.data.partition import ClientData, partition_by_user
from fedrec.data.types import Dataset, RatingDataset, check_split
from fedrec.errors import ConfigError, ProtocolError
from fedrec.federation.aggregation import sum_rows
from fedrec.federation.message import THIRD_PARTY
from fedrec.federation.runtime import (
    Observer,
    PartyContext,
    PartyLogic,
    Routed,
    Runtime,
    cohort_chunks,
)
from fedrec.federation.secrets import PartySecret
from fedrec.federation.secure_sum import (
    SECAGG_STEPS,
    SecureSumClient,
    run_secure_sum,
    secure_sum_config,
    secure_sum_request,
    validate_secure_sum_options,
)
from fedrec.models import gnn
from fedrec.privacy import (
    NO_GUARANTEE,
    ItemTokenizer,
    LaplaceMechanism,
    attack_fields,
    clip_linf,
    linf_laplace_epsilon,
    no_guarantee,
    worst_client_accountant,
)

PSEUDO_SETS = ("per_round", "fixed", "fixed_coupled", "fixed_copy")


@dataclass
class GNNModelConfig(RunConfig):
    """The options of FedGNN's model (:mod:`fedrec.models.gnn`), federated or centralized."""

    # Paper: 256; authors' code: 64. 64 keeps an ML-100K epoch of FedGNN at a few seconds on 2
    # CPU cores.
    dim: int = option(64, "embedding = hidden size (paper: 256; authors' code: 64)")
    gnn: str = option("gat", "gat | gcn | ggnn (paper's default: GAT)")
    loss: str = option("mse", "mse | mae")
    init_std: float = option(0.1, "standard deviation of the initial embeddings")
    feature_dropout: float = option(0.0, "inverted dropout on the subgraph's input embeddings "
                                         "(paper: 0.2)")
    chunk_slots: int = option(400_000, "padded (user, item) slots per vectorised chunk "
                                       "(memory)")

    def validate(self) -> None:
        super().validate()
        check_range("dim", self.dim, 1)
        check_choice("gnn", self.gnn, gnn.GNN_KINDS)
        check_choice("loss", self.loss, gnn.LOSSES)
        check_range("init_std", self.init_std, 0.0, low_open=True)
        check_range("feature_dropout", self.feature_dropout, 0.0, 0.9)
        check_range("chunk_slots", self.chunk_slots, 1)


@dataclass
class FedGNNConfig(GNNModelConfig):
    rounds: int = option(100)
    clients_per_round: int = option(128, "|S| (paper: 128)")
    eval_every: int = option(10)
    loss_reduction: str = option("mean", "mean over the client's ratings (paper) | sum")
    lr: float = option(0.01, "server SGD learning rate (paper: 0.01)")
    lr_user: float = option(0.5, "client SGD step on its own user embedding (on the mean loss)")
    # The last step's gradients are uploaded; the paper: one gradient per round. 5 steps
    # overfit the user embeddings of sparse datasets (seed 0, privacy on: Flixster 0.944 ->
    # 0.904, Douban 0.773 -> 0.759, YahooMusic 28.2 -> 21.5 with 1 step) and do not help
    # ML-100K (0.968 -> 0.970).
    local_steps: int = option(1, "client steps on its user embedding per round (paper: 1)")
    pseudo_items: int = option(1000, "M pseudo interacted items per upload (paper: 1000)")
    # per_round: new pseudo ids each round (the intersection of a client's uploads finds its
    # items) | fixed: ids kept, rows redrawn (row consistency finds them) | fixed_coupled: ids
    # and mixing coefficients kept | fixed_copy: ids kept, each copies a real row (module doc).
    pseudo_set: str = option("fixed", "per_round | fixed | fixed_coupled | fixed_copy (see "
                                      "fedrec.algorithms.fedgnn)")
    clip: float = option(0.1, "delta: L-infinity clip of the unified gradient (0 = no "
                              "clipping)")
    laplace: float = option(0.2, "lambda: Laplace noise scale (0 = no noise, no LDP)")
    neighbours: int = option(100, "N neighbours per item from the expansion (0 = no expansion)")
    expand_after: int = option(2, "T: expand after this many epochs (epoch = ceil(clients / "
                                  "|S|) rounds)")
    trainable_neighbours: bool = option(False, "true: redo the exchange every round (the "
                                               "paper's trainable variant)")
    bias: bool = option(False, "true: user bias (device) + item bias (last column of the item "
                               "table, uploaded like the item rows)")
    item_avg: str = option("cohort", "cohort: item rows summed / |S| (FedAvg) | uploaders: / "
                                     "clients that uploaded that row (real or pseudo)")
    lr_decay: float = option(1.0, "server lr x lr_decay every epoch")
    lr_model: float = option(0.0, "server lr of the GNN weights (0 = lr); item rows always use "
                                  "lr")
    l2: float = option(0.0, "L2 on user embeddings (client) and the item table (server)")
    dp_delta: float = option(1e-5, "delta of the composed epsilon where PLD is computed (else "
                                   "pure, delta 0)")
    # Costs more CPU per round than training: bench/bench_leakage_cost.py.
    measure_leakage: bool = option(False, "run the rated-items attack on the uploads; its F1 "
                                          "in the privacy report")
    item_privacy: str = option("pseudo", "pseudo: the paper's pseudo items | secure_sum: "
                                         "dense gradients, only as the cohort's secure sum "
                                         "(needs clip > 0)")
    secagg_threshold: float = option(0.6, "secure_sum: t = ceil(threshold * cohort) clients "
                                          "must survive each step")
    secagg_clip: float = option(0.0, "secure_sum: ring bound per coordinate (0: clip, + 20 * "
                                     "laplace with LDP)")
    secagg_bits: int = option(32, "secure_sum: the ring Z_{2^bits} of the masked sums")

    def validate(self) -> None:
        super().validate()
        check_choice("loss_reduction", self.loss_reduction, ("mean", "sum"))
        check_range("lr", self.lr, 0.0, low_open=True)
        check_range("lr_user", self.lr_user, 0.0)
        check_range("local_steps", self.local_steps, 1)
        check_range("pseudo_items", self.pseudo_items, 0)
        check_choice("pseudo_set", self.pseudo_set, PSEUDO_SETS)
        check_range("clip", self.clip, 0.0)
        check_range("laplace", self.laplace, 0.0)
        if self.laplace > 0 and self.clip <= 0:
            raise ConfigError("laplace noise needs clip > 0 (without clipping it bounds nothing)")
        check_range("neighbours", self.neighbours, 0)
        check_range("expand_after", self.expand_after, 0)
        check_range("dp_delta", self.dp_delta, 0.0, 0.5)
        check_choice("item_avg", self.item_avg, ("cohort", "uploaders"))
        check_range("lr_decay", self.lr_decay, 0.0, low_open=True)
        check_range("l2", self.l2, 0.0)
        check_range("lr_model", self.lr_model, 0.0)
        check_choice("item_privacy", self.item_privacy, ITEM_PRIVACY)
        check_range("secagg_clip", self.secagg_clip, 0.0)
        if self.item_privacy == "secure_sum":
            if self.clip <= 0:
                raise ConfigError("item_privacy=secure_sum needs clip > 0 (the secure sum's "
                                  "fixed-point ring holds only bounded values)")
            if self.clients_per_round == 1:
                raise ConfigError("item_privacy=secure_sum needs clients_per_round >= 2 "
                                  "(a sum of one client is that client's upload)")
            validate_secure_sum_options(self.secagg_threshold, ring_bound(self),
                                        self.secagg_bits)


ITEM_PRIVACY = ("pseudo", "secure_sum")
RING_TAILS = 20.0  # ring bound = clip + RING_TAILS * laplace: P(|Lap| > bound - clip) = e^-20


def ring_bound(cfg: FedGNNConfig) -> float:
    """Bound of each coordinate in the secure sum's fixed-point ring: ``secagg_clip`` if set,
    else ``clip`` without noise and ``clip + 20 laplace`` with it. Noised values beyond it are
    clipped by the encoder (post-processing: the local DP guarantee is unchanged; about one
    coordinate in 5e8 is affected)."""
    return cfg.secagg_clip or cfg.clip + RING_TAILS * cfg.laplace


def pad_subgraphs(datas: Sequence[ClientData], e_u: torch.Tensor,
                  nb_means: Sequence[torch.Tensor | None], items_table: torch.Tensor, dim: int
                  ) -> dict[str, torch.Tensor]:
    """Padded, masked tensors of a chunk of local subgraphs (leading dim = ``len(datas)``):
    ``items``/``mask``/``ratings`` (B, K), ``nb_mean`` (B, d; zeros without neighbours),
    ``e_u`` (B, d[+1]) and ``e_items`` (B, K, d[+1]) gathered from ``items_table``."""
    kmax = max(max((d.num_train for d in datas), default=1), 1)
    b = len(datas)
    items = torch.zeros(b, kmax, dtype=torch.long)
    mask = torch.zeros(b, kmax, dtype=torch.bool)
    ratings = torch.zeros(b, kmax)
    nb_mean = torch.zeros(b, dim)
    for r, data in enumerate(datas):
        k = data.num_train
        items[r, :k] = torch.from_numpy(data.train_items.astype(np.int64))
        mask[r, :k] = True
        ratings[r, :k] = torch.from_numpy(data.train_values.astype(np.float32))
        if nb_means[r] is not None:
            nb_mean[r] = nb_means[r]
    return {"items": items, "mask": mask, "ratings": ratings, "nb_mean": nb_mean,
            "e_u": e_u, "e_items": items_table[items]}


def pad_tests(datas: Sequence[ClientData], split: str = "test"
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(items, ratings, mask)`` of the ``split`` rows (``valid`` or ``test``), each (B, T), of
    a chunk of clients."""
    rows = [d.rows(check_split(split)) for d in datas]
    tmax = max(max((len(i) for i, _ in rows), default=1), 1)
    test = torch.zeros(len(datas), tmax, dtype=torch.long)
    vals = torch.zeros(len(datas), tmax)
    tmask = torch.zeros(len(datas), tmax, dtype=torch.bool)
    for r, (items, values) in enumerate(rows):
        n = len(items)
        test[r, :n] = torch.from_numpy(items.astype(np.int64))
        vals[r, :n] = torch.from_numpy(values.astype(np.float32))
        tmask[r, :n] = True
    return test, vals, tmask


def ldp_mechanism(cfg: FedGNNConfig) -> LaplaceMechanism | None:
    """The noise of one upload coordinate: clipped to [-clip, clip] (L1 sensitivity ``2 clip``
    for that coordinate alone), plus ``Lap(laplace)``: FedGNN's Eq. 1. Its ``epsilon()`` is the
    per-coordinate figure only; an upload's guarantee is that of the whole vector
    (:func:`linf_laplace_epsilon`, :meth:`FedGNNServer.privacy_report`). None when ``clip`` or
    ``laplace`` is 0: the run then claims no local DP (the one place that decides)."""
    if cfg.laplace <= 0 or cfg.clip <= 0:
        return None
    return LaplaceMechanism(2 * cfg.clip, cfg.laplace)


class FedGNNClient(PartyLogic):
    """A device: its ratings (data), its user embedding and the mean of its neighbours (state)."""

    def __init__(self, cfg: FedGNNConfig, num_items: int, mu: float,
                 rating_range: tuple[float, float], template: gnn.Params) -> None:
        self.cfg = cfg
        self.num_items = num_items
        self.mu = mu
        self.rating_range = rating_range
        self.template = template
        # The model works in units of a quarter of the rating range (1 on 1..5 scales, 24.75 on
        # YahooMusic's 1..100), so one set of learning rates and clip bounds fits every dataset.
        self.unit = rating_unit(rating_range)
        self.f = gnn.loss_fn(cfg.gnn, cfg.loss, cfg.loss_reduction, mu / self.unit)
        self.mechanism = ldp_mechanism(cfg)
        self.secure = SecureSumClient(cfg.secagg_threshold, ring_bound(cfg), cfg.secagg_bits)

    def init_state(self, party: int, data: Any, secret: PartySecret) -> dict[str, Any]:
        gen = secret.generator("init-user")
        e_u = torch.randn(self.cfg.dim, generator=gen) * self.cfg.init_std
        if self.cfg.bias:
            e_u = torch.cat([e_u, torch.zeros(1)])
        return {"e_u": e_u, "nb_mean": None}

    def handle(self, step: str, ctx: PartyContext, payload: Payload) -> Any:
        return self.handle_cohort(step, [ctx], [payload])[0]

    def handle_cohort(self, step: str, ctxs: Sequence[PartyContext],
                      payloads: Sequence[Payload]) -> list[Any]:
        for c in ctxs:  # neighbour lists wait in the inbox until the client is next reached
            self._install(c)
        if step in SECAGG_STEPS:
            return [self.secure.handle(step, c, p) for c, p in zip(ctxs, payloads, strict=True)]
        if step == "train":
            out = self._train(ctxs, payloads[0])
            if self.cfg.item_privacy == "secure_sum":  # the step ends with the keys, not x
                return [self.secure.advertise(c, x, payloads[0])
                        for c, x in zip(ctxs, out, strict=True)]
            return out
        if step == "evaluate":
            return self._evaluate(ctxs, payloads[0])
        if step == "expand_key":
            return [self._send_tokens(c, p) for c, p in zip(ctxs, payloads, strict=True)]
        if step == "expand_install":
            return [None] * len(ctxs)
        raise ValueError(f"FedGNN clients have no step {step!r}")

    # -- graph expansion ----------------------------------------------------------------------
    def _send_tokens(self, ctx: PartyContext, payload: Payload) -> Routed:
        data: ClientData = ctx.data
        tokens = ItemTokenizer(bytes(payload["key"])).tokens(data.train_items.astype(np.int64))
        return Routed({THIRD_PARTY: {"tokens": tokens, "embedding":
                                    ctx.state["e_u"][: self.cfg.dim].clone()}})

    def _install(self, ctx: PartyContext) -> None:
        for msg in ctx.inbox:
            if msg.sender == THIRD_PARTY and msg.step == "expand_match":
                nb = torch.as_tensor(msg.payload["embeddings"]).float()
                count = torch.as_tensor(msg.payload["counts"]).long()
                if nb.shape[0] != ctx.data.num_train:
                    raise ProtocolError("neighbour list does not match the tokens sent")
                # The model sees neighbours only through their mean (fedrec.models.gnn): keep
                # that, not the K x N x d list.
                m = (torch.arange(nb.shape[1])[None, :] < count[:, None]).float()
                ctx.state["nb_mean"] = (m[..., None] * nb).sum((0, 1)) / m.sum().clamp(min=1.0)
        return None

    # -- padded cohort tensors ----------------------------------------------------------------
    def _pad(self, ctxs: Sequence[PartyContext], idx: np.ndarray, items_table: torch.Tensor
             ) -> dict[str, torch.Tensor]:
        return pad_subgraphs([ctxs[i].data for i in idx],
                             torch.stack([ctxs[i].state["e_u"] for i in idx]),
                             [ctxs[i].state["nb_mean"] for i in idx], items_table, self.cfg.dim)

    # -- training -----------------------------------------------------------------------------
    def _train(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        cfg = self.cfg
        table = torch.as_tensor(payload["items"]).float()
        p = gnn.unflatten(torch.as_tensor(payload["model"]).float(), self.template)
        sizes = np.array([c.data.num_train for c in ctxs])
        out: list[Payload | None] = [None] * len(ctxs)
        for idx in cohort_chunks(sizes, cfg.chunk_slots):
            t = self._pad(ctxs, idx, table)
            e_u = t["e_u"]
            # The user step is on the mean loss whatever loss_reduction is, so that a client
            # with many ratings takes the same-size step as one with few.
            step = cfg.lr_user / (t["mask"].sum(1, keepdim=True).clamp(min=1).float()
                                  if cfg.loss_reduction == "sum" else 1.0)
            keep_u, keep_t = self._dropout_masks(ctxs, idx, e_u, t["e_items"])
            data = (t["e_items"] * keep_t, t["nb_mean"], t["mask"], t["ratings"] / self.unit)
            for _ in range(cfg.local_steps - 1):
                g_u = gnn.cohort_user_grads(self.f, p, e_u * keep_u, *data) * keep_u
                e_u = e_u - step * g_u - cfg.lr_user * cfg.l2 * e_u
            gp, gu, gt, loss = gnn.cohort_grads(self.f, p, e_u * keep_u, *data)
            # Chain rule through the dropout masks: d loss / d e = keep * d loss / d (keep e).
            gu, gt = gu * keep_u, gt * keep_t
            new_u = e_u - step * gu - cfg.lr_user * cfg.l2 * e_u
            flat_p = torch.cat([gp[k].reshape(len(idx), -1) for k in sorted(gp)], 1)
            for r, i in enumerate(idx):
                ctx = ctxs[i]
                ctx.state["e_u"] = new_u[r].detach().clone()
                k = ctx.data.num_train
                out[i] = self._protect(ctx, flat_p[r], t["items"][r, :k], gt[r, :k],
                                       float(loss[r]))
        return out  # type: ignore[return-value]

    def _dropout_masks(self, ctxs: Sequence[PartyContext], idx: np.ndarray, e_u: torch.Tensor,
                       e_items: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inverted-dropout masks (rate ``feature_dropout``) on the embedding columns of the
        user and item nodes of each client's subgraph (bias columns are kept), drawn from the
        client's own keyed generator; all ones when the rate is 0."""
        rate, d = self.cfg.feature_dropout, self.cfg.dim
        keep_u, keep_t = torch.ones_like(e_u), torch.ones_like(e_items)
        if rate <= 0:
            return keep_u, keep_t
        for r, i in enumerate(idx):
            gen = ctxs[i].generator("dropout")
            keep_u[r] = gnn.dropout_keep(tuple(e_u.shape[1:]), rate, d, gen)
            keep_t[r] = gnn.dropout_keep(tuple(e_items.shape[1:]), rate, d, gen)
        return keep_u, keep_t

    def pseudo(self, ctx: PartyContext, real_items: torch.Tensor, real_grads: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """``M`` unrated items and Gaussian gradients with the real rows' mean and covariance.

        ``pseudo_set`` decides what is redrawn each round (module docstring): ``per_round``
        draws the ids and the mixing coefficients ``Z`` afresh; ``fixed`` keeps the ids and
        redraws ``Z``; ``fixed_coupled`` keeps both; ``fixed_copy`` keeps the ids and gives each
        a real item whose row it copies (each real item copied ``M // K`` or one more times).
        What is kept comes from a generator keyed by the client's secret alone (no round), so
        it is the same every round and as private as the secret."""
        k = len(real_items)
        m = min(self.cfg.pseudo_items, self.num_items - k)
        if m <= 0 or k == 0:
            return real_items[:0], real_grads[:0]
        mode = self.cfg.pseudo_set
        gen = ctx.generator("pseudo")
        # What a client keeps across rounds: drawn again each round from its secret alone.
        kept = gen if mode == "per_round" else ctx.secret.generator("pseudo-set")
        rated = torch.zeros(self.num_items, dtype=torch.bool)
        rated[real_items] = True
        rated[torch.from_numpy(ctx.data.train_items.astype(np.int64))] = True
        m = min(m, int((~rated).sum()))
        perm = torch.randperm(self.num_items, generator=kept)
        ids = perm[~rated[perm]][:m]
        if mode == "fixed_copy":  # balanced: with M >= K, every real row has copies
            src = torch.randperm(k, generator=kept).repeat(m // k + 1)[:m]
            return ids, real_grads[src]
        mean = real_grads.mean(0)
        # Rows follow the order of ctx.data.train_items, the same every round: a kept Z ties
        # each pseudo row to the same combination of the same real items in every round.
        z = torch.randn(m, k, generator=kept if mode == "fixed_coupled" else gen)
        dev = (real_grads - mean) / math.sqrt(max(k - 1, 1))
        # Linear in the real rows on purpose: a D x D factor of the covariance (QR, Cholesky)
        # would need fewer draws for K > D, but as a non-linear function of the rows it turns
        # an ulp of difference in the gradients (another engine's padding) into different
        # pseudo rows (measured: simulator vs Flower 1.5e-5 apart after 3 rounds, not ~1e-9).
        return ids, torch.addmm(mean, z, dev)

    def _protect(self, ctx: PartyContext, g_model: torch.Tensor, items: torch.Tensor,
                 g_items: torch.Tensor, loss: float) -> Payload | np.ndarray:
        cfg = self.cfg
        if cfg.item_privacy == "secure_sum":
            return self.secure_input(ctx, g_model, items, g_items)
        p_ids, p_grads = self.pseudo(ctx, items, g_items)
        ids = torch.cat([items, p_ids])
        gen = ctx.generator("ldp")
        perm = torch.randperm(len(ids), generator=gen)
        ids = ids[perm]
        # The unified vector [model gradient, shuffled rows], the rows gathered straight into it.
        n, width = g_model.numel(), g_items.shape[1]
        unified = torch.empty(n + len(ids) * width, dtype=g_items.dtype)
        unified[:n] = g_model
        torch.index_select(torch.cat([g_items, p_grads]), 0, perm,
                           out=unified[n:].view(len(ids), width))
        if cfg.clip > 0:
            unified = clip_linf(unified, cfg.clip)
        if self.mechanism is not None:  # numpy's PCG64: half the cost of torch's uniforms
            unified = self.mechanism.add_noise(unified, ctx.rng("ldp-noise"))
        out: Payload = {"items": ids, "grad_items": unified[n:].view(len(ids), width),
                        "grad_model": unified[:n]}
        # The training loss is a function of the private ratings that no noise covers: it
        # travels only in runs that claim no local DP, where it serves as a progress statistic.
        if self.mechanism is None:
            out["loss"] = loss
        return out

    def secure_input(self, ctx: PartyContext, g_model: torch.Tensor, items: torch.Tensor,
                     g_items: torch.Tensor) -> np.ndarray:
        """The client's input to the secure sum (see :meth:`FedGNNServer.secure_sum`): its
        GNN-weight gradient and its item gradient dense over all items (zero rows for items it
        did not rate), clipped and, under LDP, noised on every coordinate, so the vector's
        shape and its noised zeros say nothing about which items are rated; then, with
        ``item_avg="uploaders"``, its rated-item indicator times the ring bound (the server
        needs per-item counts; this block is exact, not noised)."""
        cfg, (n, width) = self.cfg, (g_model.numel(), g_items.shape[1])
        dense = torch.zeros(n + self.num_items * width, dtype=g_items.dtype)
        dense[:n] = g_model
        dense[n:].view(self.num_items, width).index_copy_(0, items, g_items)
        dense = clip_linf(dense, cfg.clip)
        if self.mechanism is not None:
            dense = self.mechanism.add_noise(dense, ctx.rng("ldp-noise"))
        parts = [dense.double().numpy()]
        if cfg.item_avg == "uploaders":
            rated = np.zeros(self.num_items)
            rated[items.numpy()] = ring_bound(cfg)
            parts.append(rated)
        return np.concatenate(parts)

    # -- evaluation ---------------------------------------------------------------------------
    def _evaluate(self, ctxs: Sequence[PartyContext], payload: Payload) -> list[Payload]:
        table = torch.as_tensor(payload["items"]).float()
        p = gnn.unflatten(torch.as_tensor(payload["model"]).float(), self.template)
        lo, hi = self.rating_range
        split = requested_split(payload)
        # Chunks sized by the scored split only: a validation evaluation never depends on the
        # test rows, not even through its padding.
        sizes = np.array([c.data.num_train + len(c.data.rows(split)[0]) for c in ctxs])
        out: list[Payload | None] = [None] * len(ctxs)
        for idx in cohort_chunks(sizes, self.cfg.chunk_slots):
            t = self._pad(ctxs, idx, table)
            test, vals, tmask = pad_tests([ctxs[i].data for i in idx], split)
            with torch.no_grad():
                pred = self.unit * gnn.cohort_predict(
                    self.cfg.gnn, self.mu / self.unit, p, t["e_u"], t["e_items"], t["mask"],
                    t["nb_mean"], table[test])
                err = (pred.clamp(lo, hi) - vals).double() * tmask
            for r, i in enumerate(idx):
                out[i] = {"sq_err": float(err[r].square().sum()),
                          "abs_err": float(err[r].abs().sum()),
                          "count": int(tmask[r].sum())}
        return out  # type: ignore[return-value]


class FedGNNThirdParty(PartyLogic):
    """The matcher: sees tokens and user embeddings, never item ids or the key."""

    def __init__(self, neighbours: int) -> None:
        self.neighbours = neighbours

    def handle(self, step: str, ctx: PartyContext, payload: Payload) -> Routed:
        if step != "expand_match":
            raise ValueError(f"the third party has no step {step!r}")
        senders, tokens, embs = [], [], []
        for msg in ctx.inbox:
            if msg.step == "expand_key":
                senders.append(msg.sender)
                tokens.append(np.asarray(msg.payload["tokens"]))
                embs.append(torch.as_tensor(msg.payload["embedding"]).float())
        if not senders:
            return Routed({})
        emb = torch.stack(embs)
        owner = np.repeat(np.arange(len(senders)), [len(t) for t in tokens])
        _, inv = np.unique(np.concatenate(tokens), return_inverse=True)
        # Groups numbered by first appearance (sender order, then each sender's own order), not
        # by token value: the draws below then do not depend on the (fresh, secret) key.
        first = np.full(inv.max() + 1 if len(inv) else 0, len(inv))
        np.minimum.at(first, inv, np.arange(len(inv)))
        inv = np.argsort(np.argsort(first, kind="stable"), kind="stable")[inv]
        order = np.argsort(inv, kind="stable")
        groups = np.split(order, np.cumsum(np.bincount(inv))[:-1])
        n_max = self.neighbours
        # nb[row] = senders (cohort positions) sharing that row's token, up to n_max, random.
        nb = np.full((len(inv), n_max), -1, dtype=np.int64)
        rng = ctx.rng("neighbours")
        for g in groups:
            m = len(g)
            if m < 2:
                continue
            keys = rng.random((m, m))
            np.fill_diagonal(keys, np.inf)  # never oneself
            take = min(n_max, m - 1)
            pick = np.argsort(keys, axis=1)[:, :take]
            nb[g, :take] = owner[g][pick]
        counts_all = (nb >= 0).sum(1)
        out: dict[Any, Payload] = {}
        start = 0
        for s, sender in enumerate(senders):
            k = len(tokens[s])
            rows = nb[start : start + k]
            counts = counts_all[start : start + k]
            start += k
            width = int(counts.max()) if k else 0
            idx = torch.from_numpy(rows[:, :width])
            vecs = emb[idx.clamp(min=0)] * (idx >= 0)[..., None]
            out[sender] = {"embeddings": vecs.contiguous(), "counts": counts}
        return Routed(out)


class FedGNNServer(ServerLogic):
    """Holds the GNN weights and item embeddings; FedAvg + SGD; drives the expansion."""

    def __init__(self, cfg: FedGNNConfig, num_items: int, num_clients: int) -> None:
        self.cfg = cfg
        gen = torch_generator(cfg.seed, "init-items")
        self.items = torch.randn(num_items, cfg.dim, generator=gen) * cfg.init_std
        if cfg.bias:  # item biases in the last column, starting at 0
            self.items = torch.cat([self.items, torch.zeros(num_items, 1)], 1)
        self.params = gnn.init_params(cfg.gnn, cfg.dim, torch_generator(cfg.seed, "init-gnn"))
        self.num_clients = num_clients
        per_round = cfg.clients_per_round or num_clients
        self.rounds_per_epoch = math.ceil(num_clients / min(per_round, num_clients))
        self.expansions = 0
        self.mechanism = ldp_mechanism(cfg)  # None: the run claims no local DP
        # The accounting's bookkeeping: uploads received per client, the largest upload's size.
        self.participation: dict[int, int] = {}
        self.max_upload_dim = 0
        self.attack: RatedItemsAttack | None = None  # the experimenter's (measure_leakage)

    def attach_instruments(self, instruments: dict[str, Any]) -> None:
        """The experimenter's instruments of :func:`fedgnn_instruments`."""
        unknown = set(instruments) - {"attack"}
        if unknown:
            raise TypeError(f"FedGNN has no instrument {sorted(unknown)}")
        self.attack = instruments.get("attack", self.attack)

    def observers(self) -> list[Observer]:
        return [self.attack] if self.attack is not None else []

    def _broadcast(self) -> Payload:
        return {"model": gnn.flatten(self.params), "items": self.items}

    def _expansion_due(self, rnd: int) -> bool:
        if self.cfg.neighbours == 0:
            return False
        done = (rnd - 1) / self.rounds_per_epoch  # epochs completed before this round
        if done < self.cfg.expand_after:
            return False
        if self.expansions == 0:
            return True
        return self.cfg.trainable_neighbours  # the paper's "updated in each iteration"

    def expand(self, rt: Runtime) -> None:
        """Algorithm 2: key to clients, tokens+embeddings to the third party, neighbours back.

        The key comes from the server's own secret (``rt.server_secret``), never from the public
        seed, from which the third party could tokenise every item and read each client's
        items; the matching does not depend on its value (groups are numbered by first
        appearance), so the same job gives the same results on every engine.
        """
        raw = rt.server_secret.key_bytes(rt.round, "fedgnn-expansion-key", size=32)  # AES-256
        key = np.frombuffer(raw, dtype=np.uint8).copy()
        clients = list(rt.client_ids)
        rt.broadcast("expand_key", clients, {"key": key})
        rt.call("expand_match", {THIRD_PARTY: {}})
        rt.broadcast("expand_install", clients, {})
        self.expansions += 1

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        stats: dict[str, float] = {}
        if self._expansion_due(rnd):
            self.expand(rt)
            stats["expanded"] = 1.0
        n = self.cfg.clients_per_round or len(rt.client_ids)
        selected = rt.sample_clients(n)
        replies: dict[Any, Payload] = {}
        if self.cfg.item_privacy == "secure_sum":
            g_model, g_items, uploads, senders = self.secure_sum(rt, selected, stats)
        else:
            replies = rt.broadcast("train", selected, self._broadcast())
            if not replies:
                raise ProtocolError(f"round {rnd}: no client update arrived")
            g_model, g_items, uploads = self._sum_uploads(replies)
            senders = [int(c) for c in replies]
        for c in senders:
            self.participation[c] = self.participation.get(c, 0) + 1
        s = len(senders)
        lr = self.cfg.lr * self.cfg.lr_decay ** ((rnd - 1) // self.rounds_per_epoch)
        if self.cfg.l2 > 0:  # the server's own regulariser on its table: no upload needed
            self.items *= 1.0 - lr * self.cfg.l2
        if self.cfg.item_avg == "uploaders":
            self.items -= lr * g_items / uploads.clamp(min=1.0)[:, None]
        else:
            self.items -= lr * g_items / s
        lr_model = (self.cfg.lr_model or self.cfg.lr) * lr / self.cfg.lr
        flat = gnn.flatten(self.params) - lr_model * g_model / s
        self.params = gnn.unflatten(flat, self.params)
        stats["clients"] = float(s)
        losses = [r["loss"] for r in replies.values() if "loss" in r]
        if losses:  # only without local DP (see FedGNNClient._protect)
            stats["train_loss"] = float(np.mean(losses))
        return stats

    def _sum_uploads(self, replies: dict[Any, Payload]
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The paper's aggregation: item rows summed per uploaded id (real or pseudo), GNN-weight
        gradients summed, and how many clients uploaded each id."""
        g_items = torch.zeros_like(self.items)
        g_model = torch.zeros_like(gnn.flatten(self.params))
        uploads = torch.zeros(len(self.items))
        for r in replies.values():
            ids = torch.as_tensor(r["items"]).long()
            sum_rows(ids, torch.as_tensor(r["grad_items"]).float(), out=g_items)
            g_model += torch.as_tensor(r["grad_model"]).float()
            self.max_upload_dim = max(self.max_upload_dim, g_model.numel() + ids.numel()
                                      * self.items.shape[1])
            sum_rows(ids, torch.ones(len(ids)), out=uploads)
        return g_model, g_items, uploads

    def secure_sum(self, rt: Runtime, selected: list[int], stats: dict[str, float]
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
        """``item_privacy="secure_sum"``: the cohort's inputs (:meth:`FedGNNClient.secure_input`)
        summed by Bonawitz et al.'s protocol; one vector per client, laid out as
        ``[GNN-weight gradient (P), item gradients (num_items x width, row-major), rated-item
        counts (num_items; item_avg="uploaders" only)]``. Returns the same sums as
        :meth:`_sum_uploads` (the counts are the numbers of survivors who rated each item) and
        the survivors: the server never sees a client's vector or item ids."""
        cfg = self.cfg
        num_items, width = self.items.shape
        p = gnn.flatten(self.params).numel()
        grads = p + num_items * width
        bound = ring_bound(cfg)
        size = grads + (num_items if cfg.item_avg == "uploaders" else 0)
        sa_cfg = secure_sum_config(size, len(selected), cfg.secagg_threshold, bound,
                                   cfg.secagg_bits)
        adverts = rt.broadcast("train", selected,
                               dict(self._broadcast(), **secure_sum_request(len(selected))))
        result = run_secure_sum(rt, adverts, sa_cfg)
        total = torch.from_numpy(result.total)
        self.max_upload_dim = max(self.max_upload_dim, grads)
        # The decoded counts are integers times the ring bound, off by < m * 0.5 / scale.
        uploads = ((total[grads:] / bound).round().float() if cfg.item_avg == "uploaders"
                   else torch.zeros(num_items))
        stats["dropped_after_keys"] = float(len(result.dropped))
        return (total[:p].float(), total[p:grads].view(num_items, width).float(), uploads,
                list(result.survivors))

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        replies = rt.broadcast("evaluate", rt.client_ids, eval_request(self._broadcast(), split))
        return reduce_client_metrics(replies.values(), True)

    def privacy_report(self) -> dict[str, Any]:
        """What a client's uploads are protected by, over the run so far.

        Guarantee (local DP, with ``clip`` δ and ``laplace`` λ > 0): neighbouring inputs are
        any two gradients of the same shape that a client could have computed in a round. An
        upload of ``d`` coordinates, each clipped to ``[-δ, δ]`` and given ``Lap(λ)``, is
        ``2δd/λ``-DP (pure); with ``d`` the largest upload received, this bounds every upload.
        Client ``c`` released ``n_c`` uploads (the rounds it took part in), so its uploads are
        together ``n_c · 2δd/λ``-DP by basic composition; ``epsilon`` is that bound for the
        largest ``n_c`` (:func:`fedrec.privacy.worst_client_accountant`, PLD where it is
        computed). ``exp(epsilon)`` bounds the likelihood ratio of any two private datasets
        given everything the client sent; at the sizes of a FedGNN upload it bounds nothing.
        Not covered: which items are uploaded (ids and their number, hidden only among pseudo
        items: ``item_ids``, no formal guarantee) and the graph expansion (user embeddings
        and item tokens to the third party, neighbours' embeddings to clients, in clear).
        """
        report = self._ldp_report()
        if self.cfg.item_privacy == "secure_sum":
            report.update(self._secure_report())
        return report

    def _secure_report(self) -> dict[str, Any]:
        cfg = self.cfg
        counts = cfg.item_avg == "uploaders"
        return {
            "item_privacy": "secure_sum",
            "pseudo_items": 0,
            "secure_aggregation": True,
            "protection": "secure aggregation (Bonawitz et al. 2017) of the dense gradients: "
                          "against an honest-but-curious server and fewer than t = "
                          f"ceil({cfg.secagg_threshold} * cohort) colluding clients",
            "item_ids": "not sent: every client's upload is dense over all items and reaches "
                        "the server only inside the cohort's secure sum",
            "leakage": "the server learns each round's sum over the surviving clients of "
                       "[GNN-weight gradient, item gradients dense over all items"
                       + (", per-item rater counts" if counts else "")
                       + "] and who survived; no item ids, no individual upload",
            "ldp_scope": ("each client's whole dense gradient vector, against any observer, "
                          "the server included" if self.mechanism is not None else
                          "none (clip only: the clip bounds the fixed-point ring)")
                         + ("; the rated-item counts block (item_avg=uploaders) is protected "
                            "by the secure sum only" if counts else ""),
        }

    def _ldp_report(self) -> dict[str, Any]:
        cfg = self.cfg
        most = max(self.participation.values(), default=0)
        counts = {
            "participations_max": most,
            "participations_mean": (float(np.mean(list(self.participation.values())))
                                    if self.participation else 0.0),
            "clients_participated": len(self.participation),
        }
        extra: dict[str, Any] = {"item_ids": self._item_ids_report()}
        if cfg.neighbours > 0:
            extra["graph_expansion"] = (
                f"{NO_GUARANTEE}: each client sends its user embedding (no noise) and keyed "
                "tokens of its rated items to the third party, which returns up to "
                f"{cfg.neighbours} co-raters' embeddings per item to every client")
        if self.mechanism is None:
            what = ("clipping only (clip > 0, laplace = 0)" if cfg.clip > 0
                    else "no clipping, no noise")
            return no_guarantee(
                protection=f"{what}: gradient values are released without noise",
                leakage="each upload carries the gradient rows of the client's rated items "
                        "(among pseudo items) and its training loss, unnoised",
                ldp=False, **counts, **extra)
        eps = linf_laplace_epsilon(cfg.clip, cfg.laplace, max(self.max_upload_dim, 1))
        vector = eps.vector_mechanism
        rep = worst_client_accountant(vector, self.participation).report(cfg.dp_delta)
        pure = rep.method.startswith("basic")
        meaning = (f"exp({rep.epsilon:.3g}) bounds nothing: the values are not protected in any "
                   "practical sense" if rep.epsilon > 10 else
                   f"exp({rep.epsilon:.3g}) bounds the likelihood ratio of any two private "
                   "datasets given all of the client's uploads")
        return {
            "ldp": True,
            "mechanism": "laplace",
            "guarantee": (
                f"local DP of the gradient values a client uploads, whole upload: d = {eps.dim} "
                f"coordinates (the largest upload received) clipped to L-infinity {cfg.clip} "
                f"(L1 sensitivity 2*clip*d = {2 * cfg.clip * eps.dim:.6g}) with Laplace scale "
                f"{cfg.laplace}, epsilon {eps.per_vector:.6g} per upload, composed over the "
                f"{most} uploads of the most-participating client; {meaning}. Not covered: "
                "the uploaded item ids (item_ids) and the graph expansion"),
            "epsilon": rep.epsilon,
            "delta": 0.0 if pure else rep.delta,
            "epsilon_method": rep.method,
            "pld_note": rep.pld_note,
            "epsilon_pld": rep.epsilon_pld,
            "epsilon_basic": rep.epsilon_basic,
            "epsilon_per_upload": eps.per_vector,
            "upload_dim": eps.dim,
            "upload_dim_note": "the largest upload received (GNN weight gradients plus one row "
                               "per real and pseudo item); every upload is accounted at it",
            "noise_multiplier": vector.noise_multiplier,
            "neighboring_relation": "local DP: any two same-shape gradients of one client",
            **counts,
            "epsilon_per_coordinate_per_upload": eps.per_coordinate,
            "epsilon_per_coordinate_note": "secondary: one coordinate of one upload with all the "
                                           "others held fixed (the figure FedGNN reports); it "
                                           "does not bound what a client releases",
            **extra,
        }

    def _item_ids_report(self) -> dict[str, Any]:
        """Which items a client uploads: hidden among pseudo items, no formal guarantee."""
        m = self.cfg.pseudo_items
        hide = (f"pseudo items: {m} unrated items per upload with Gaussian rows of the real "
                "rows' mean and covariance, ids shuffled" if m > 0 else
                "none: with pseudo_items = 0 the uploaded ids are the client's rated items")
        summary = self.attack.summary() if self.attack is not None else {}
        name = ("RatedItemsAttack (fedrec.attacks.rated_items): each upload's rated items "
                "guessed from its rows alone (k = uploaded - pseudo_items), the guess rule "
                "with the best mean F1 over every upload of the run; attacks that combine a "
                "client's uploads across rounds are not measured here")
        details = {} if not summary else {
            "measured_attack_rule": self.attack.best_rule() if self.attack else None,
            "measured_attack_uploads": summary["attack_uploads"],
            "measured_attack_random_f1": summary.get("attack_random_f1")}  # chance level
        measured = attack_fields(name, summary.get("attack_f1"), "set measure_leakage=true",
                                 **details)
        return no_guarantee(protection=hide,
                            leakage="each upload names its rated items among the pseudo ones",
                            **measured)

    def state_dict(self) -> dict[str, Any]:
        return {"items": self.items.clone(), "params": {k: v.clone() for k, v in
                                                        self.params.items()},
                "expansions": self.expansions, "participation": dict(self.participation),
                "max_dim": self.max_upload_dim,
                "attack": self.attack.state_dict() if self.attack is not None else None}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.items = state["items"].clone()
        self.params = {k: v.clone() for k, v in state["params"].items()}
        self.expansions = state["expansions"]
        self.participation = dict(state["participation"])
        self.max_upload_dim = state["max_dim"]
        if self.attack is not None and state.get("attack") is not None:
            self.attack.load_state_dict(state["attack"])


def fedgnn_instruments(cfg: FedGNNConfig, dataset: Dataset) -> dict[str, Any]:
    """The experimenter's instruments (:attr:`~fedrec.algorithms.base.AlgorithmSpec.instruments`):
    with ``measure_leakage``, the rated-items ``attack`` on the server's inbox, given each
    client's training items only to score its guesses (it estimates ``k`` from the public
    ``pseudo_items``). Read by no protocol step."""
    if not cfg.measure_leakage:
        return {}
    positives = {u: c.train_items for u, c in partition_by_user(dataset).items()}
    return {"attack": RatedItemsAttack(positives, pseudo_items=cfg.pseudo_items, seed=cfg.seed)}


def build_fedgnn_job(cfg: FedGNNConfig, dataset: Dataset, device: torch.device) -> FederatedJob:
    """The job; on a metadata-only dataset (a ServerApp's) no experimenter's instruments."""
    if not isinstance(dataset, RatingDataset):
        raise TypeError("FedGNN needs an explicit rating dataset")
    clients = partition_by_user(dataset)
    server = FedGNNServer(cfg, dataset.num_items, len(clients))
    if not dataset.meta.get("metadata_only"):
        server.attach_instruments(fedgnn_instruments(cfg, dataset))
    client = FedGNNClient(cfg, dataset.num_items, scale_midpoint(dataset),
                          (dataset.rating_min, dataset.rating_max), server.params)
    return FederatedJob(server=server, client_logic=client, client_data=clients,
                        services={THIRD_PARTY: (FedGNNThirdParty(cfg.neighbours), None)})


def build_fedgnn(cfg: FedGNNConfig, dataset: Dataset, device: torch.device) -> FederatedTrainer:
    return FederatedTrainer(build_fedgnn_job(cfg, dataset, device), cfg, device)
