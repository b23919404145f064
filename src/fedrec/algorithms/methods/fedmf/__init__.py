"""FedMF: secure federated matrix factorisation (Chai et al., IEEE Intelligent Systems 2020,
arXiv:1906.05108), the Paillier-encrypted baseline of FedGNN's comparison table.

FCF (:mod:`fedrec.algorithms.methods.fcf`) with every item update encrypted under Paillier
(:mod:`fedrec.privacy.paillier`). Arrangement (FedMF's own): the server keeps the item table
``V = [Q | b_i]`` (``num_items x (dim + 1)``: factors and biases of :mod:`fedrec.models.mf`)
*encrypted*; the clients share one Paillier key pair; the server holds only the public key and
only ever adds ciphertexts.

Setup (first round, steps ``public_key``): the key pair lives in the client logic -- every
client holds the same pair, drawn by a CSPRNG
(:meth:`~fedrec.federation.secrets.PartySecret.csprng`) keyed by the secret all clients share
and the server never holds (derived from the experimenter's client secret,
:mod:`fedrec.federation.secrets`; on Flower every client SuperNode must be given the same
``client-secret``, which ``fedrec deploy`` does). Never from the run seed, which the server has:
it could rebuild the private key. The server asks one client of the cohort (the next, should it
drop out) for the public key and receives ``n`` (``key_bits / 8`` bytes). It draws ``V_0`` from
the run seed exactly as FCF does and stores its trivial encryption (``r = 1``): ``V_0`` is the
server's own public initialisation, so randomising it would hide nothing, and every client
update adds fresh randomness.

Each round (steps ``train``):

1. server -> each selected client: ``Enc(V_t)``, ``num_items x (dim + 1)`` ciphertexts.
2. Each client decrypts ``V_t`` and runs FCF's local step unchanged (``local_steps`` steps of
   ``lr_user`` on its own user factor and bias, then the gradient ``g_u`` of its summed loss
   with respect to the item rows it rated), and uploads ``Enc(Δ_u)`` with ``Δ_u = -lr · g_u``:

   * ``upload: full`` (FedMF's secure variant, default): ``Δ_u`` for **all** items, zero rows
     for the unrated ones, so every upload has the same shape and -- ciphertexts being
     semantically secure -- the server cannot tell which items were rated;
   * ``upload: part``: only the rated rows, with their item ids in plaintext (FedMF's cheaper
     variant, which reveals *which* items a client rated but not the ratings or gradients).

3. The server multiplies the ciphertexts in: ``Enc(V_{t+1}) = Enc(V_t) ⊕ Σ_u Enc(Δ_u)``, i.e.
   ``V_{t+1} = V_t - lr · Σ_u g_u``: plain SGD on the summed client gradients. (FCF's server
   takes an Adam step; Adam is not linear, so it cannot run on ciphertexts. FedMF's own code
   likewise scales the gradient by the learning rate on the client and subtracts ciphertexts.)

Evaluation (``evaluate``): every client receives ``Enc(V)``, decrypts it and returns the error
sums of its own test ratings (FCF's client-side RMSE/MAE).

What each party learns: the server sees the public key, ciphertexts of a data-independent shape
(``full``) and the cohort; with ``part`` also each client's rated item ids. Every client decrypts
``V`` each round, so it learns the round's *aggregate* update ``V_{t+1} - V_t`` -- with one
other participant, that participant's gradient (FedMF shares this weakness). Paillier gives
no integrity: a malicious server or client can add anything (FedMF assumes honest-but-curious
parties). No differential privacy.

Fixed point, measured costs per key size and learning: ``docs/fedmf.md``.
"""

from __future__ import annotations

import torch

from fedrec.algorithms.base import AlgorithmSpec, FederatedJob
from fedrec.algorithms.contract import Contract
from fedrec.algorithms.methods.fedmf.client import FedMFClient
from fedrec.algorithms.methods.fedmf.config import UPLOAD_MODES, FedMFConfig
from fedrec.algorithms.methods.fedmf.meta import METHOD
from fedrec.algorithms.methods.fedmf.server import FedMFServer
from fedrec.data.partition import partition_by_user
from fedrec.data.types import Dataset, RatingDataset
from fedrec.federation.runtime import declare_parties


def build_fedmf_job(cfg: FedMFConfig, dataset: Dataset, device: torch.device) -> FederatedJob:
    if not isinstance(dataset, RatingDataset):
        raise TypeError("FedMF needs a rating dataset (explicit ratings, RMSE/MAE)")
    return FederatedJob(
        FedMFServer(cfg, dataset.num_items),
        parties=declare_parties(partition_by_user(dataset), FedMFClient(cfg, dataset)),
    )


SPEC = AlgorithmSpec.of(
    METHOD,
    config_cls=FedMFConfig,
    build_job=build_fedmf_job,
    contract=Contract(
        settings={"key_bits": 512, "clients_per_round": 3, "dim": 4, "upload": "part"},
        exempt={"privacy_boundary": "its uploads are Paillier ciphertexts randomised from the "
                "OS CSPRNG (semantic security): two runs' messages differ whatever the data; "
                "what they encrypt is FCF's client step (fedrec.algorithms.item_gradient), "
                "which fcf's check covers"},
    ),
)

__all__ = ["SPEC", "UPLOAD_MODES", "FedMFClient", "FedMFConfig", "FedMFServer", "build_fedmf_job"]
