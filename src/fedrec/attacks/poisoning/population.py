"""Who is malicious in a poisoning experiment, which items they promote, and the data the
malicious clients hold (:mod:`fedrec.attacks.poisoning`).

The attacker's knowledge, as the literature grants it (FedRecAttack, PipAttack, A-hum): the
catalogue's size, each item's public popularity (its count of training interactions, which a
store shows as "n ratings"), the median profile size, and whatever the protocol sends its own
clients. It never reads a benign user's rows: :func:`plan_attack` hands the malicious clients
only the profiles built here (for a takeover, the taken-over user's own rows besides).

* **Targets**: ``poisoning_targets`` items drawn (from the run's public seed) among the less
  popular half of the catalogue: cold items, which few benign users would rank high.
* **Profiles** of the data attacks (the malicious client runs the method's own code on it):
  every target at the top of the rating scale, plus ``poisoning_profile`` filler items --
  ``random``: uniformly drawn items with uniformly drawn ratings; ``popular``: the most popular
  items, at the top of the scale (popularity mimicry: the targets are pulled towards the
  items most users like). Model-poisoning attacks hold the ``random`` profile, so that they
  take part in the protocol as a user of that profile would.
* **Kinds**: ``fake`` users are added after the last user id (the population grows, as when an
  attacker registers accounts), with no feature and no social link; ``takeover`` replaces the
  profile of existing users, drawn from the seed among the users with training rows (the
  population is unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fedrec.attacks.poisoning.options import PoisoningOptions, malicious_count
from fedrec.core.rng import numpy_rng
from fedrec.data.types import Interactions, RatingDataset
from fedrec.errors import ConfigError


@dataclass(frozen=True)
class AttackPlan:
    """A poisoning experiment's population: the dataset the job is built from (with the fake
    users' or taken-over users' profiles), the malicious clients' ids, the target items and the
    number of benign users."""

    dataset: RatingDataset | object
    malicious: tuple[int, ...]
    targets: np.ndarray
    benign_users: int
    #: Every item by public popularity, most popular first (the attacker's knowledge).
    by_popularity: np.ndarray


def item_popularity(train: Interactions, num_items: int) -> np.ndarray:
    """Each item's count of training interactions (the public popularity the attacker knows)."""
    return np.bincount(train.items, minlength=num_items)


def draw_targets(popularity: np.ndarray, count: int, seed: int) -> np.ndarray:
    """``count`` target items drawn without replacement among the items at or below the
    median popularity (sorted ids)."""
    cold = np.flatnonzero(popularity <= np.median(popularity))
    if count > len(cold):
        raise ConfigError(f"poisoning_targets is {count} but the catalogue has {len(cold)} items "
                          "in its less popular half")
    return np.sort(numpy_rng(seed, "poisoning-targets").choice(cold, count, replace=False))


def fake_profiles(cfg: PoisoningOptions, users: np.ndarray, targets: np.ndarray,
                  popularity: np.ndarray, scale: tuple[float, float] | None,
                  profile_size: int) -> Interactions:
    """The training rows of the malicious ``users``: the targets and ``profile_size`` filler
    items each (module docstring); values at the top of the ``scale`` (None: implicit, 1)."""
    rng = numpy_rng(cfg.seed, "poisoning-profiles")
    num_items = len(popularity)
    others = np.setdiff1d(np.arange(num_items), targets)
    size = min(profile_size, len(others))
    by_popularity = others[np.argsort(-popularity[others], kind="stable")]
    users_out, items_out, values_out = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [
        np.zeros(0)]
    top = 1.0 if scale is None else scale[1]
    for u in users.tolist():
        if cfg.poisoning == "popular":
            filler = by_popularity[:size]
            filler_values = np.full(size, top)
        else:
            filler = rng.choice(others, size, replace=False)
            filler_values = (np.ones(size) if scale is None else
                             rng.integers(int(scale[0]), int(scale[1]) + 1, size).astype(float))
        items = np.concatenate([targets, filler])
        users_out.append(np.full(len(items), u, dtype=np.int64))
        items_out.append(items.astype(np.int64))
        values_out.append(np.concatenate([np.full(len(targets), top), filler_values]))
    return Interactions(np.concatenate(users_out), np.concatenate(items_out),
                        np.concatenate(values_out).astype(np.float32))


def plan_attack(cfg: PoisoningOptions, dataset: RatingDataset) -> AttackPlan:
    """The population of ``cfg``'s attack on ``dataset`` (module docstring)."""
    train = dataset.train
    popularity = item_popularity(train, dataset.num_items)
    targets = draw_targets(popularity, cfg.poisoning_targets, cfg.seed)
    user_ids = np.unique(train.users)
    count = malicious_count(cfg.malicious_fraction, len(user_ids))
    sizes = np.bincount(train.users)[user_ids]
    profile_size = cfg.poisoning_profile or int(np.median(sizes))
    scale = ((dataset.rating_min, dataset.rating_max) if isinstance(dataset, RatingDataset)
             else None)
    if cfg.malicious_kind == "fake":
        malicious = np.arange(dataset.num_users, dataset.num_users + count, dtype=np.int64)
        rows = fake_profiles(cfg, malicious, targets, popularity, scale, profile_size)
        feats = dataset.user_features
        if feats is not None:  # a fake user states no feature (all zeros)
            feats = np.concatenate([feats[: dataset.num_users],
                                    np.zeros((count, *feats.shape[1:]), feats.dtype)])
        graph = dataset.user_graph
        if graph is not None:  # a fake user has no social link
            graph = graph.tocsr(copy=True)
            graph.resize((dataset.num_users + count, dataset.num_users + count))
        poisoned = replace(dataset, num_users=dataset.num_users + count,
                           train=Interactions.concat(train, rows), user_features=feats,
                           user_graph=graph)
    else:
        malicious = np.sort(numpy_rng(cfg.seed, "poisoning-takeover").choice(
            user_ids, count, replace=False))
        rows = fake_profiles(cfg, malicious, targets, popularity, scale, profile_size)
        kept = train.select(~np.isin(train.users, malicious))
        poisoned = replace(dataset, train=Interactions.concat(kept, rows))
    return AttackPlan(poisoned, tuple(int(u) for u in malicious), targets, len(user_ids),
                      np.argsort(-popularity, kind="stable"))
