"""FedGRec: federated LightGCN with lazily updated latent embeddings (Luo et al., 2022).

State, as the paper places it. Each client ``u`` keeps its embedding ``e_u^0``, its latent user
embeddings ``e_u^1..e_u^K`` and its interactions ``N_u``; none leaves the device. The server
keeps the item embeddings ``e_t^0``, the latent item embeddings ``e_t^1..e_t^K`` and the item
degrees ``|N_t|``. Representations combine the layers as LightGCN does,
``e = (e^0 + ... + e^K) / (K + 1)`` (:class:`fedrec.models.lightgcn.LightGCNConv`); scores are
inner products; the loss is BPR with ``num_negatives`` sampled negatives per positive
(``loss: mse``: squared error against 1 on positives and 0 on the sampled negatives) plus
LightGCN's L2 on the layer-0 rows.

Warm-up (Algorithm 1, lines 3-9), in the first round, over every client in sums of at most
``clients_per_round`` clients: (1) each client uploads the dense indicator of its items; the
sum is ``|N_t|``. (2) For ``k = 1..K`` in turn: the server broadcasts ``e_t^0``, the latent
tables so far and ``|N_t|``; each client computes ``e_u^{k-1}`` (its own ``e_u^0``, or
``sum_{t in N_u} e_t^{k-2} / sqrt(|N_u| |N_t|)``) and uploads its contribution
``e_u^{k-1} / sqrt(|N_u| |N_t|)`` on its items' rows, dense over all items; the sum is
``e_t^k``. The latent tables then equal LightGCN's propagation of the initial ``E^(0)``.
Clients learn ``|N_t|`` from each download (the whole vector, or their rows).

A round (Steps 1-4 of the paper's Figure 1):

1. The server samples ``clients_per_round`` clients; each downloads ``e_t^0``, ``e_t^1..e_t^K``
   and ``|N_t|``: the whole tables (``download: full``, the default: the download reveals
   nothing), or (``download: rows``) only the rows of its items and this round's negatives,
   which it first names to the server (``request_rows``): the server then learns every sampled
   client's items (stated in the privacy report).
2. The client refreshes ``e_u^k = sum_{t in N_u} e_t^{k-1} / sqrt(|N_u| |N_t|)``, ``k = 1..K``
   (one propagation per layer, from the downloaded tables).
3. It trains ``e_u^0`` and its own copy of the rows ``e_t^0`` of its positives and negatives
   for ``local_steps`` Adam steps (``lr``, a fresh optimizer each round; ``lr_schedule: cosine``
   anneals it to ``lr_final`` over the run, :meth:`FedGRecConfig.client_lr`) on its mean loss,
   every latent embedding fixed. ``own_edge_gradient: true`` (not the paper's) recomputes the two
   latent terms that depend on what the client trains, ``e_u^1 = sum_{t in N_u} e_t^0 /
   sqrt(|N_u| |N_t|)`` from its copies of its item rows and, on its own items,
   ``e_t^1 = latent^1_t + (e_u^0 - s_u^{0, sent}) / sqrt(|N_u| |N_t|)`` (the server's sum with
   the client's share made current), so the gradient also takes LightGCN's layer-1 paths along
   the client's own edges; at K = 1 it is LightGCN's gradient of the client's loss with every
   other user's share as the server holds it. The loss at the first step, what is uploaded and
   its form are unchanged. ``user_fit_train_steps: S`` (not the paper's) first fits ``e_u^0``
   alone to the downloaded tables for ``S`` Adam steps (``user_fit_lr``; every item row and
   latent embedding fixed; a fresh uniform negative per positive and step), then runs Step 3
   from the fitted vector. Why: a Gowalla client is sampled about once an epoch and its
   ``local_steps`` steps leave ``e_u^0`` far from its best fit to the current tables (a finished
   run's users move by more than their own norm when fitted; ``docs/fedgrec.md``).
4. It uploads one dense vector ``[loss | delta e_t^0 (N x d) | rows trained (N) | latent
   deltas (K x N x d)]``: the change of its item rows, a 1 on every row it trained, and, in a
   *refresh round* (round ``r`` with ``(r - 1) % refresh_period == 0``), the change of its
   latent contribution since its last one: ``(s_u^{k-1} - s_u^{k-1, sent}) / sqrt(|N_u| |N_t|)``
   on its items' rows, where the sources ``s_u^0 = e_u^0`` (after Step 3) and ``s_u^k = e_u^k``
   (Step 2) for ``k = 1..K-1``. The server adds to ``e_t^0`` each row's summed update divided by
   the number of sampled clients that trained it (FedAvg of the rows; a row nobody trained stays),
   times ``server_lr`` (1: FedAvg's mean; 2 and 4 measured below it on Gowalla at 10 epochs,
   ``docs/fedgrec.md``), and adds the latent deltas to ``e_t^1..e_t^K``.

What the latent item embeddings equal after each round: ``e_t^k = sum_{u in N_t} s_u^{k-1} /
sqrt(|N_u| |N_t|)`` where ``s_u`` are the sources of user ``u``'s *latest contribution*: those
of the last refresh round in which ``u`` was sampled (and its contribution reached the sum), or
of the warm-up if it has not been since. Each change is fixed-point rounded, so each user's
share of a row is off by at most ``0.5 / scale`` per contribution it made
(:mod:`fedrec.privacy.fixedpoint`; exact up to float64 rounding with ``secagg_bits: 64``). A
change whose rows would leave ``[-secagg_clip, secagg_clip]`` is never clipped: the client sends
that layer's change scaled down to fit and records only that much as sent (the rest follows at
its next refreshes), so the tables stay the sums of what every client recorded as sent. Counts
(the degree indicators, rows trained) travel as multiples of ``secagg_clip`` and are rounded
back to integers; the reported ``train_loss`` is the mean of ``min(loss, secagg_clip)``.
``refresh_period: 0`` keeps the warm-up's latent tables for the whole run. The latent user
embeddings are refreshed (Step 2) whenever a client is sampled; evaluation ranks with them
recomputed from the current tables (and, with ``user_fit_steps: S``, not the paper's, with
``e_u^0`` fitted as above for ``S`` steps to the tables it downloaded for ranking; the fitted
vector is used for that ranking only, never kept, so evaluating does not train).

Every upload is a sum (``secure_aggregation: true``, the default: Bonawitz et al.'s secure sum,
:mod:`fedrec.federation.secure_sum`; ``false``: a plain sum of the same clipped, fixed-point
encoded vectors, so both give the same model). A plain upload travels whole (``plain_upload:
dense``) or as its nonzero entries and their positions (``sparse``: the same sum bit for bit, and
what a large catalogue needs: a Gowalla upload has 40,981 x (64 x 4 + 1) coordinates, of which a
client fills a few hundred rows; without masking the dense form hides nothing the sparse one
shows). Each client builds its upload from its own rows, never a dense table, so a plain sum
costs what the client's rows cost. A client records a latent contribution as the
server's once its upload is in the sum (the masking step, or the plain reply): a client that
drops before that is not counted and sends the whole change next time.

Bad input and edge cases: ``num_layers: 0`` is federated BPR-MF (no latent embeddings, no
warm-up, uploads ``[loss | delta e_t^0 | rows trained]``); a client with no interactions trains
nothing and uploads zeros; an item nobody has has ``|N_t| = 0`` and zero latent rows; a negative
option is a one-line ConfigError. Not handled yet: a client absent from the warm-up (a dropout in
round 1) is missing from ``|N_t|`` for the whole run, and its first contribution then arrives
whole at its first refresh round.

``dp: distributed | central`` (:mod:`fedrec.federation.dp_sum`, beyond the paper): user-level DP
through the one DP aggregate. No warm-up; each round a Poisson cohort sends one vector per client,
``[delta e_t^0 | degree change | latent change]``, clipped in L2 to ``dp_clip`` as a whole
(Skellam noise inside the secure sum, or a trusted server's Gaussian); the server keeps the degree
and latent sums unnormalised and divides by ``sqrt(max(D_t, 1))`` itself, and moves ``e_t^0`` by
``server_lr`` times the noised update sum over the expected cohort. What one release is, what a
client records when clipped and why a persisting latent contribution is accounted in the rounds
that carried it: :mod:`fedrec.algorithms.methods.fedgrec.dp`, which also states the public options
that bound the noise the tables carry (per-block budgets ``dp_latent_clip`` and
``dp_latent_share``; ``dp_latent: sums | estimate | none``; a public degree ``dp_degree``).
``secure_aggregation``, ``plain_upload`` and ``plain_sum_part`` are not read (masking is
``dp_masking``'s); ``download: rows``, and ``refresh_period: 0`` with latent layers, are one-line
errors. Evaluation replies go to the experimenter; no loss is sent.

Malicious clients (``poisoning``, :mod:`fedrec.attacks.poisoning`; beyond the paper): fake or
taken-over clients run the method's own client code on their crafted profiles (``random``,
``popular``), or (``crafted``, ``untargeted``) replace the item-row block of their Step 4 upload
with the attack's (:mod:`fedrec.algorithms.methods.fedgrec.poisoning`: scored as ``p_u . q_i``
on the ``alpha``-combined item table, no bias, an approximation stated there), through the
client's own encoding: clipped to ``secagg_clip`` per coordinate, in clear or into the secure
sum, or bounded to ``dp_clip`` under ``dp``; ``download: rows`` refuses the model attacks. The
benign clients' evaluation reports the targets' exposure in the ranking they recommend with.
A ``defense`` other than ``none`` needs clear uploads (``secure_aggregation: false``, no ``dp``;
otherwise a one-line ConfigError): the server then decodes each upload and estimates the item
rows' sum with :func:`~fedrec.federation.aggregation.robust_sum`
(:mod:`fedrec.algorithms.methods.fedgrec.defense`); the loss, the rows-trained counts and the
latent contributions are summed as sent.

Where the paper's text is cut (Sections 5.1-5.3 and Algorithm 1 are lost in our copy), we chose:
the latent contributions as changes since the client's last one (so the server's tables are
exact sums without storing any client's share), Adam rather than SGD on the client, FedAvg of the
item rows (the mean over the clients that trained a row, its count carried in the secure sum),
Step 2 in every round but the latent upload only every ``refresh_period`` rounds (the lazy
update), the warm-up's exact ``K``-pass propagation, and Adam's L2 as LightGCN's.
"""

from __future__ import annotations

import torch

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob
from fedrec.algorithms.contract import Contract
from fedrec.algorithms.methods.fedgrec.client import FedGRecClient
from fedrec.algorithms.methods.fedgrec.config import FedGRecConfig
from fedrec.algorithms.methods.fedgrec.meta import METHOD
from fedrec.algorithms.methods.fedgrec.poisoning import fedgrec_item_table
from fedrec.algorithms.methods.fedgrec.server import FedGRecServer
from fedrec.algorithms.ncf_common import implicit_split
from fedrec.data.partition import partition_by_user
from fedrec.data.types import Dataset
from fedrec.federation.runtime import declare_parties


def build_fedgrec_job(cfg: FedGRecConfig, dataset: Dataset,
                      device: torch.device) -> FederatedJob:
    ds = implicit_split(dataset, cfg)
    return FederatedJob(FedGRecServer(cfg, ds.num_items, device, ds.num_users),
                        parties=declare_parties(partition_by_user(ds),
                                                FedGRecClient(cfg, ds.num_items, ds.num_users)))


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=FedGRecConfig,
    build_job=build_fedgrec_job,
    poisoning=fedgrec_item_table,
    contract=Contract(
        settings={"dim": 8, "num_layers": 1, "refresh_period": 2, "local_steps": 2,
                  "clients_per_round": 16, "user_fit_steps": 3, "user_fit_train_steps": 3},
        # The paper's Step 3 and ranking (--preset paper), and the own-edge gradient alone.
        boundary_variants=({"own_edge_gradient": False, "user_fit_steps": 0,
                            "user_fit_train_steps": 0},
                           {"user_fit_steps": 0, "user_fit_train_steps": 0}),
        dp_settings={"dp": "distributed", "noise_multiplier": 1.0},
    ),
)

__all__ = ["SPEC", "FedGRecClient", "FedGRecConfig", "FedGRecServer", "build_fedgrec_job"]
