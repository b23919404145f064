"""Seed replay: a curious server regenerates the clients' "private" draws from the public config.

Threat model: an honest-but-curious server holding exactly what it legitimately has -- the
run's configuration (``seed`` included) and the messages it receives -- and the code of the
protocol. If a client keys its noise, sampling, shuffles or keys by the run seed (as fedrec did
up to commit ``b43ef81``: ``(seed, round, step, party, ...)``), the server replays them:

* **FedGNN** (:class:`FedGNNReplay`): the shuffle that mixes real and pseudo item rows
  (``torch_generator(seed, round, "train", client, "ldp")``) tells which uploaded ids are real,
  and the Laplace noise (``numpy_rng(seed, round, "train", client, "ldp-noise")``) subtracted from
  an upload leaves the clipped gradient (``|x| <= clip`` everywhere: the noise is then exact);
* **PTF-FedRec** (:class:`PTFReplay`): each client's ``beta``, ``gamma`` and the per-item keys
  that choose which positives and negatives it uploads (``derive_seed(seed, round,
  "ptf-client")``) give how many positives it uploaded and which items were kept as negatives;
* **FedMF** (:func:`fedmf_replayed_public_key`): the shared Paillier key pair drawn by
  ``random.Random(derive_seed(seed, "fedmf-paillier-key"))``: with it the server decrypts every
  update;
* **FedGNN's expansion key** (:func:`fedgnn_replayed_expansion_key`): the third party, if it
  can derive the AES key, tokenises every item and reads each client's rated items.

Each replay reports how well it recovered the secret against the ground truth (the experimenter
scores the attack; the guesses never use the truth). With client draws keyed by a party secret
(:mod:`fedrec.federation.secrets`) the replayed draws are unrelated to the real ones and every
figure falls to chance: ``tests/attacks/test_seed_replay.py`` and ``bench/bench_seed_replay.py``.
The replays use only functions that exist in every fedrec version, so the same module measures
the old behaviour on an old checkout.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from fedrec.core.rng import counter_uniform, derive_seed, numpy_rng, torch_generator
from fedrec.federation.message import Message
from fedrec.metrics.classification import set_precision_recall_f1
from fedrec.privacy import LaplaceMechanism
from fedrec.privacy.paillier import generate_keypair, public_key_from_bytes


@dataclass
class ReplayScore:
    """Mean precision / recall / F1 of the replay's guesses over the uploads scored, the same
    for chance (a guess of the same size drawn at random from the upload), and the share of
    uploads whose replayed noise was exact (FedGNN only; NaN elsewhere)."""

    uploads: int
    precision: float
    recall: float
    f1: float
    f1_chance: float
    noise_exact: float = float("nan")


def _mean(rows: list[tuple[float, float, float, float]], exact: list[bool] | None
          ) -> ReplayScore:
    if not rows:
        return ReplayScore(0, float("nan"), float("nan"), float("nan"), float("nan"))
    arr = np.asarray(rows, dtype=np.float64)
    return ReplayScore(len(rows), *arr.mean(0).tolist(),
                       noise_exact=float(np.mean(exact)) if exact else float("nan"))


class FedGNNReplay:
    """Observer of FedGNN's ``train`` uploads replaying each client's shuffle and noise.

    The shuffle: the client uploads ``cat(real ids, pseudo ids)[perm]`` with ``perm`` a
    ``randperm`` of the upload's length; ``K = len(ids) - M`` real ids (``M`` = the configured
    pseudo items; the server knows it), so the replayed ``perm`` names the real ones. The noise:
    ``upload - replayed Laplace`` within the clip bound everywhere means the noise was exact.
    """

    def __init__(self, seed: int, pseudo_items: int, clip: float, laplace: float) -> None:
        self.seed = seed
        self.pseudo_items = pseudo_items
        self.clip = clip
        self.mechanism = LaplaceMechanism(2 * clip, laplace) if clip > 0 and laplace > 0 \
            else None
        self.uploads: list[tuple[int, np.ndarray, np.ndarray, bool]] = []

    def __call__(self, msg: Message) -> None:
        if msg.step != "train" or msg.direction != "up" or not isinstance(msg.sender, int):
            return
        if "grad_items" not in msg.payload:
            return  # another mode of FedGNN (e.g. a secure sum): nothing to replay here
        client, rnd = int(msg.sender), int(msg.round)
        ids = np.asarray(msg.payload["items"]).astype(np.int64)
        m = min(self.pseudo_items, len(ids))
        k = len(ids) - m
        gen = torch_generator(self.seed, rnd, "train", client, "ldp")
        perm = torch.randperm(len(ids), generator=gen).numpy()
        guess = ids[perm < k]
        exact = False
        if self.mechanism is not None:
            flat = torch.cat([torch.as_tensor(msg.payload["grad_model"]).reshape(-1),
                              torch.as_tensor(msg.payload["grad_items"]).reshape(-1)]).float()
            noise = self.mechanism.add_noise(torch.zeros_like(flat),
                                             numpy_rng(self.seed, rnd, "train", client,
                                                       "ldp-noise"))
            exact = bool((flat - noise).abs().max() <= self.clip * (1 + 1e-4))
        self.uploads.append((client, ids, guess, exact))

    def score(self, rated: Mapping[int, np.ndarray]) -> ReplayScore:
        """Against each client's true training items ``rated``."""
        rows, exact = [], []
        for client, ids, guess, ok in self.uploads:
            true = np.intersect1d(ids, rated[client])
            p, r, f = set_precision_recall_f1(guess, true)
            rows.append((p, r, f, _chance_f1(len(guess), len(true), len(ids))))
            exact.append(ok)
        return _mean(rows, exact if self.mechanism is not None else None)


class PTFReplay:
    """Observer of PTF-FedRec's ``train`` uploads replaying each client's sampling draws.

    Replayed per (client, round): ``beta`` and ``gamma`` (hence ``k_pos``, the number of
    positives uploaded, from the upload's size) and the per-item keys ``u3`` (positives are kept
    by smallest ``u3``) and ``u4`` (negatives by smallest ``u4``). An uploaded negative was kept
    for a small ``u4`` among many negatives and has ``u3`` uniform; a positive has ``u3 < beta``
    and ``u4`` uniform. The guess: the ``k_pos`` uploaded items with ``u3 < beta`` and the largest
    ``u4``.
    """

    def __init__(self, seed: int, beta_range: tuple[float, float],
                 gamma_range: tuple[float, float]) -> None:
        self.seed = seed
        self.beta_range = beta_range
        self.gamma_range = gamma_range
        self.uploads: list[tuple[int, np.ndarray, np.ndarray]] = []

    def __call__(self, msg: Message) -> None:
        if msg.step != "train" or msg.direction != "up" or not isinstance(msg.sender, int):
            return
        if "items" not in msg.payload or "scores" not in msg.payload:
            return
        client, rnd = int(msg.sender), int(msg.round)
        items = np.asarray(msg.payload["items"]).astype(np.int64)
        seed_r = derive_seed(self.seed, rnd, "ptf-client")
        c = torch.tensor([client])
        lo, hi = self.beta_range
        beta = float(lo + (hi - lo) * counter_uniform(seed_r, c, torch.tensor(1)))
        lo, hi = self.gamma_range
        gamma = float(lo + (hi - lo) * counter_uniform(seed_r, c, torch.tensor(2)))
        k_pos = _uploaded_positives(len(items), gamma)
        it = torch.from_numpy(items)
        u3 = counter_uniform(seed_r, torch.full_like(it, client), torch.tensor(3), it).numpy()
        u4 = counter_uniform(seed_r, torch.full_like(it, client), torch.tensor(4), it).numpy()
        score = np.where(u3 < beta, u4, -1.0)
        guess = items[np.argsort(-score, kind="stable")[:k_pos]]
        self.uploads.append((client, items, guess))

    def score(self, positives: Mapping[int, np.ndarray]) -> ReplayScore:
        """Against the positives each client uploaded."""
        rows = []
        for client, items, guess in self.uploads:
            true = np.intersect1d(items, positives[client])
            p, r, f = set_precision_recall_f1(guess, true)
            rows.append((p, r, f, _chance_f1(len(guess), len(true), len(items))))
        return _mean(rows, None)


def _uploaded_positives(n_up: int, gamma: float) -> int:
    """``k`` with ``k + max(1, floor(gamma k)) = n_up`` (PTF-FedRec's upload size when the
    client has enough negatives), else the nearest ``n_up / (1 + gamma)``."""
    for k in range(1, n_up + 1):
        if k + max(1, int(np.floor(gamma * k))) == n_up:
            return k
    return max(1, round(n_up / (1 + gamma)))


def _chance_f1(guessed: int, true: int, total: int) -> float:
    """Expected F1 of ``guessed`` ids drawn at random from ``total`` of which ``true`` are
    positive (precision = recall share: ``true / total`` and ``guessed / total``)."""
    if guessed == 0 or true == 0 or total == 0:
        return 0.0
    hits = guessed * true / total
    p, r = hits / guessed, hits / true
    return 2 * p * r / (p + r)


def fedmf_replayed_public_key(seed: int, key_bits: int) -> bytes:
    """The modulus ``n`` of the key pair derived from the public seed (what a server would
    compare with the ``public_key`` reply; equal means it holds the private key too)."""
    from fedrec.privacy.paillier import public_key_to_bytes

    public, _private = generate_keypair(key_bits,
                                        random.Random(derive_seed(seed, "fedmf-paillier-key")))
    return public_key_to_bytes(public)


def fedmf_key_replayed(seed: int, key_bits: int, observed_n: bytes) -> bool:
    """Whether the server's replay rebuilt the clients' key pair (its ``n`` is the observed)."""
    return public_key_from_bytes(fedmf_replayed_public_key(seed, key_bits)) == \
        public_key_from_bytes(observed_n)


class FedMFKeyReplay:
    """Observer of FedMF's ``public_key`` replies: whether each received modulus is the one the
    server rebuilds from the public seed (:func:`fedmf_key_replayed`)."""

    def __init__(self, seed: int, key_bits: int) -> None:
        self.seed = seed
        self.key_bits = key_bits
        self.rebuilt: list[bool] = []

    def __call__(self, msg: Message) -> None:
        if msg.step != "public_key" or msg.direction != "up":
            return
        n = msg.payload["n"]
        n = n if isinstance(n, bytes) else bytes(np.asarray(n, dtype=np.uint8))
        self.rebuilt.append(fedmf_key_replayed(self.seed, self.key_bits, n))


def fedgnn_replayed_expansion_key(seed: int, rnd: int) -> bytes:
    """The AES key of a round's graph expansion as derived from the public seed."""
    return hashlib.blake2b(repr((seed, rnd, "fedgnn-key")).encode(), digest_size=32).digest()
