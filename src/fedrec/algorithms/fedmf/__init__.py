"""FedMF: secure federated matrix factorisation (Chai et al., IEEE Intelligent Systems 2020,
arXiv:1906.05108), the Paillier-encrypted baseline of FedGNN's comparison table.

FCF (:mod:`fedrec.algorithms.fcf`) with every item update encrypted under Paillier
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

Fixed point: values are encrypted with resolution ``2^-32`` (:mod:`fedrec.privacy.paillier`);
one round's decrypted table is within ``(clients + 1) · 2^-33`` per entry of the plaintext
``V_t - lr · Σ_u g_u``. A client whose own update is not finite sends nothing (the server
cannot inspect ciphertexts, so the check must happen before encryption); so does one whose
update is beyond the fixed-point range (``|Δ| >= 2^30``).

What each party learns: the server sees the public key, ciphertexts of a data-independent shape
(``full``) and the cohort; with ``part`` also each client's rated item ids. Every client decrypts
``V`` each round, so it learns the round's *aggregate* update ``V_{t+1} - V_t`` -- with one
other participant, that participant's gradient (FedMF shares this weakness). Paillier gives
no integrity: a malicious server or client can add anything (FedMF assumes honest-but-curious
parties). No differential privacy.

Cost (measured on this project's shared 2-core machine, one core, gmpy2-backed ``phe``; ML-100K:
1,682 items, ``dim = 8``, so 15,138 ciphertexts per table; CPU seconds, wall time was up to 2x
more under load):

============  ==========  ==============  ==============  ===================
key_bits      ciphertext  encrypt table   decrypt table   table on the wire
============  ==========  ==============  ==============  ===================
512 (tests)   128 B       3-6 s           1-2 s           1.9 MB
1024          256 B       ~17 s           ~5 s            3.9 MB
2048          512 B       ~123 s          ~36 s           7.75 MB
============  ==========  ==============  ==============  ===================

One round at the packaged defaults (2048 bits, 5 clients, ``full``): 654 s CPU (~11 min);
7,750,700 bytes up and 7,750,699 down per client (``15,138 x 512`` plus the codec header); the
server's additions are negligible (~6 µs per ciphertext). ``part`` encrypts and uploads only the
rated rows (~85 per client on ML-100K: ~20x less). The simulator decrypts a broadcast once per
cohort (all clients receive the same ciphertexts and hold the same key), so a round costs
``clients_per_round x encrypt + 1 x decrypt`` here, while each real device pays its own
decryption. An evaluation sends the table to every client (943 x 7.75 MB = 7.3 GB metered at
2048 bits) and costs one decryption here. Learning is that of FCF with a plain-SGD server: after
the defaults' 20 rounds (100 client updates) the test RMSE is about 1.14 (from 1.27); reaching
FCF's ~0.93 needs every client for ~30 rounds (``lr`` 0.002), i.e. ~28,000 table encryptions
(both measured with the ciphertexts replaced by plaintext sums: the same arithmetic up to the
``2^-32`` rounding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from phe import PaillierPrivateKey, PaillierPublicKey

from fedrec.algorithms.base import FederatedJob, FederatedTrainer, ServerLogic
from fedrec.algorithms.fcf import FCFClient, FCFConfig
from fedrec.algorithms.mf_common import eval_request, reduce_client_metrics
from fedrec.config import check_choice, check_range, option
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.data.partition import partition_by_user
from fedrec.data.types import Dataset, RatingDataset
from fedrec.errors import ConfigError, ProtocolError
from fedrec.federation.runtime import Outgoing, PartyContext, Runtime
from fedrec.federation.secrets import PartySecret
from fedrec.models.mf import init_factors
from fedrec.privacy.paillier import (
    DEFAULT_KEY_BITS,
    EncryptedArray,
    generate_keypair,
    max_abs_value,
    public_key_from_bytes,
    public_key_to_bytes,
)
from fedrec.privacy.report import no_guarantee

UPLOAD_MODES = ("full", "part")


@dataclass
class FedMFConfig(FCFConfig):
    """FCF's options (``lr`` is the SGD step on the item table here) plus the encryption's."""

    # Cost on ML-100K at these defaults: ~11 CPU-minutes per round (~2 min per client to encrypt
    # 1682 x 9 values at 2048 bits), 7.75 MB up + 7.75 MB down per client per round; every
    # evaluation sends the encrypted table to all 943 clients (7.3 GB metered).
    rounds: int = option(20)
    clients_per_round: int = option(5, "Paillier is slow: each client encrypts num_items x "
                                       "(dim + 1) values")
    dim: int = option(8)
    # Stable on ML-100K: 0.05 up to ~20 clients per round, 0.02 up to 100, 0.002 with all.
    lr: float = option(0.05, "SGD step on the item table: V -= lr * (sum of the cohort's "
                             "gradients); lower it for bigger cohorts")
    key_bits: int = option(DEFAULT_KEY_BITS, "Paillier modulus n in bits; FedMF's released code "
                                             "uses 1024 (~7x faster)")
    upload: str = option("full", "full: every item row, unrated ones zero (hides which items "
                                 "were rated) | part: only the rated rows, their ids in "
                                 "plaintext (~20x cheaper)")

    def validate(self) -> None:
        super().validate()
        check_range("key_bits", self.key_bits, 512, 8192)
        if self.key_bits % 8:
            raise ConfigError(f"key_bits must be a multiple of 8, got {self.key_bits}")
        check_choice("upload", self.upload, UPLOAD_MODES)


class FedMFClient(FCFClient):
    """A device: FCF's client, with the item table arriving and its update leaving encrypted."""

    def __init__(self, cfg: FedMFConfig, dataset: RatingDataset) -> None:
        super().__init__(cfg, dataset)
        self.cfg: FedMFConfig = cfg
        self._keys: dict[PartySecret, tuple[PaillierPublicKey, PaillierPrivateKey]] = {}

    def keys(self, ctx: PartyContext) -> tuple[PaillierPublicKey, PaillierPrivateKey]:
        """The key pair every client shares: drawn by a CSPRNG keyed by the clients' role secret
        (which the server never holds), so every client derives the same pair on its own."""
        secret = ctx.role_secret
        if secret not in self._keys:
            self._keys[secret] = generate_keypair(self.cfg.key_bits,
                                                  secret.csprng("fedmf-paillier-key"))
        return self._keys[secret]

    def item_parameters(
        self, payload: Payload, ctx: PartyContext
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        public, private = self.keys(ctx)
        table = EncryptedArray.from_wire(public, payload["table"]).decrypt(private)
        v = torch.as_tensor(table, dtype=torch.float32, device=ctx.device)
        return v[:, :-1].contiguous(), v[:, -1].contiguous()

    def handle(self, step: str, ctx: PartyContext, payload: Payload) -> Outgoing:
        return self.handle_cohort(step, [ctx], [payload])[0]

    def handle_cohort(
        self, step: str, ctxs: Sequence[PartyContext], payloads: Sequence[Payload]
    ) -> list[Outgoing]:
        if step == "public_key":
            return [{"n": public_key_to_bytes(self.keys(c)[0])} for c in ctxs]
        if step not in ("train", "evaluate"):
            raise ValueError(f"FedMF clients have no step {step!r}")
        out = super().handle_cohort(step, ctxs, payloads)
        if step == "train":
            return [self._encrypt_update(c, msg) for c, msg in zip(ctxs, out, strict=True)]
        return list(out)

    def _encrypt_update(self, ctx: PartyContext, msg: Payload) -> Payload | None:
        """FCF's plaintext upload ``(items, grad_q, grad_b)`` -> ``Enc(-lr · g)``."""
        items = torch.as_tensor(msg["items"]).cpu().numpy().astype(np.int64)
        grad = torch.cat([torch.as_tensor(msg["grad_q"]),
                          torch.as_tensor(msg["grad_b"]).unsqueeze(1)], dim=1)
        delta = -self.cfg.lr * grad.detach().cpu().double().numpy()
        if not (np.isfinite(delta).all() and np.abs(delta).max(initial=0.0) < max_abs_value()):
            return None  # abstain: a diverged update would poison the encrypted table unseen
        public = self.keys(ctx)[0]
        if self.cfg.upload == "part":
            return {"items": items, "update": EncryptedArray.encrypt(public, delta).to_wire()}
        dense = np.zeros((self.num_items, delta.shape[1]))
        dense[items] = delta
        return {"update": EncryptedArray.encrypt(public, dense).to_wire()}


class FedMFServer(ServerLogic):
    """Holds ``Enc(V)`` and the public key; adds ciphertexts; never holds a private key."""

    def __init__(self, cfg: FedMFConfig, num_items: int) -> None:
        self.cfg = cfg
        self.num_items = num_items
        self.public_key: PaillierPublicKey | None = None
        self.table: EncryptedArray | None = None

    def _setup(self, rt: Runtime, candidates: Sequence[int]) -> None:
        """Fetch the clients' public key; store the (public) initial table, encrypted."""
        reply = None
        for client in candidates:  # any key holder will do; the next one if it dropped out
            reply = rt.call("public_key", {client: {}}).get(client)
            if reply is not None:
                break
        if reply is None:
            raise ProtocolError("no client answered the public-key request")
        public = public_key_from_bytes(reply["n"])
        if public.n.bit_length() != self.cfg.key_bits:
            raise ProtocolError(
                f"public key has {public.n.bit_length()} bits, expected {self.cfg.key_bits}")
        # FCF's initial item factors (same seed and stream), zero biases.
        q0 = init_factors(self.num_items, self.cfg.dim, torch_generator(self.cfg.seed,
                                                                        "init-items"))
        v0 = np.concatenate([q0.double().numpy(), np.zeros((self.num_items, 1))], axis=1)
        self.public_key = public
        self.table = EncryptedArray.encode_public(public, v0)

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        n = self.cfg.clients_per_round or len(rt.client_ids)
        selected = rt.sample_clients(n)
        if self.table is None:
            self._setup(rt, selected)
        assert self.table is not None and self.public_key is not None
        replies = rt.broadcast("train", selected, {"table": self.table.to_wire()})
        if not replies:
            raise ProtocolError(
                f"round {rnd}: no client update arrived (dropped out, or abstained after a "
                "non-finite local update); if updates diverge, lower lr_user or lr"
            )
        table = self.table
        for client, reply in replies.items():
            table = self._add_update(table, client, reply)
        self.table = table
        return {"clients": len(replies)}

    def _add_update(self, table: EncryptedArray, client: int, reply: Payload) -> EncryptedArray:
        """``table ⊕ Enc(Δ_client)``; the shape is all the server can check."""
        update = EncryptedArray.from_wire(self.public_key, reply["update"])
        if self.cfg.upload == "full":
            if update.shape != table.shape:
                raise ProtocolError(f"client {client}: update of shape {update.shape}, "
                                    f"expected {table.shape}")
            return table + update
        items = np.asarray(reply["items"], dtype=np.int64)
        if (update.shape != (len(items), table.shape[1]) or len(np.unique(items)) != len(items)
                or (len(items) and (items.min() < 0 or items.max() >= self.num_items))):
            raise ProtocolError(f"client {client}: malformed partial update")
        return table.add_rows(items, update)

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        if self.table is None:  # before the first round: set up with the first clients
            self._setup(rt, rt.client_ids)
        assert self.table is not None
        replies = rt.broadcast("evaluate", rt.client_ids,
                               eval_request({"table": self.table.to_wire()}, split))
        return reduce_client_metrics(replies.values(), explicit=True)

    def privacy_report(self) -> dict[str, Any]:
        leak = ("the server sees only ciphertexts of a fixed shape" if self.cfg.upload == "full"
                else "each upload names the client's rated items in plaintext")
        return no_guarantee(
            protection=f"Paillier encryption of item gradients ({self.cfg.key_bits}-bit n): "
                       "semantic security under DCR against an honest-but-curious server "
                       "holding only the public key",
            leakage=f"{leak}; every client (all share the private key) decrypts the item "
                    "table, hence each round's aggregate update",
            encryption=f"Paillier ({self.cfg.key_bits}-bit n)", upload=self.cfg.upload)

    def state_dict(self) -> dict[str, Any]:
        if self.table is None or self.public_key is None:
            return {"n": None, "table": None}
        return {"n": public_key_to_bytes(self.public_key), "table": self.table.to_wire()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state["n"] is None:
            self.public_key, self.table = None, None
            return
        self.public_key = public_key_from_bytes(state["n"])
        self.table = EncryptedArray.from_wire(self.public_key, state["table"])


def build_fedmf_job(cfg: FedMFConfig, dataset: Dataset, device: torch.device) -> FederatedJob:
    if not isinstance(dataset, RatingDataset):
        raise TypeError("FedMF needs a rating dataset (explicit ratings, RMSE/MAE)")
    return FederatedJob(
        server=FedMFServer(cfg, dataset.num_items),
        client_logic=FedMFClient(cfg, dataset),
        client_data=partition_by_user(dataset),
    )


def build_fedmf(cfg: FedMFConfig, dataset: Dataset, device: torch.device) -> FederatedTrainer:
    return FederatedTrainer(build_fedmf_job(cfg, dataset, device), cfg, device)
