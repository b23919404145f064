"""Item metadata and user demographics, kept beside a dataset's arrays.

A loader that reads them stores an :class:`ItemInfo` in ``meta["item_info"]`` and a
:class:`UserInfo` in ``meta["user_info"]``, row ``i``/``u`` describing dense id ``i``/``u``.
They live in ``meta`` on purpose: :func:`fedrec.data.fingerprint.fingerprint` leaves ``meta`` out,
so a loader that keeps them gives the very arrays and fingerprints it gave before, and no
algorithm that reads ``train``/``test``/``*_features`` sees them unless it asks
(:func:`item_info`, :func:`user_info`).

Who may know what: an item's title, year and genres are the public catalogue (every client can
download them); a user's demographics are that user's own data (a client holds its own row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrec.errors import ConfigError


@dataclass(frozen=True)
class ItemInfo:
    """Per item (dense id order): ``titles`` without the year GroupLens appends (``"Toy Story"``,
    the form RecBole's ``movie_title`` has), ``years`` the year of the title's trailing
    ``(YYYY)`` (int16, 0 where there is none), ``release_dates`` as GroupLens writes them
    (``"01-Jan-1995"``, ``""`` where missing; None from a source without them, e.g. RecBole)
    and ``genres`` the ``(num_items, len(genre_names))`` float32 0/1 flags."""

    titles: tuple[str, ...]
    years: np.ndarray
    genres: np.ndarray
    genre_names: tuple[str, ...]
    release_dates: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.titles)


@dataclass(frozen=True)
class UserInfo:
    """Per user (dense id order): ``ages`` (int64, years), ``genders`` and ``occupations``
    (int64 codes into ``gender_names``/``occupation_names``) and ``zip_codes`` (as written)."""

    ages: np.ndarray
    genders: np.ndarray
    occupations: np.ndarray
    zip_codes: tuple[str, ...]
    gender_names: tuple[str, ...]
    occupation_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.ages)

    def first(self, n: int) -> UserInfo:
        """Users ``0..n-1`` only (what a dataset sliced to its first ``n`` users keeps)."""
        return UserInfo(self.ages[:n], self.genders[:n], self.occupations[:n],
                        self.zip_codes[:n], self.gender_names, self.occupation_names)


def item_info(ds: object) -> ItemInfo:
    """``ds.meta["item_info"]``; ConfigError naming the dataset when its loader keeps none."""
    return _get(ds, "item_info", ItemInfo, "item titles and genres")


def user_info(ds: object) -> UserInfo:
    """``ds.meta["user_info"]``; ConfigError naming the dataset when its loader keeps none."""
    return _get(ds, "user_info", UserInfo, "user demographics (age, gender, occupation)")


def _get(ds: object, key: str, kind: type, what: str) -> ItemInfo | UserInfo:
    meta = getattr(ds, "meta", None) or {}
    found = meta.get(key)
    if not isinstance(found, kind):
        name = getattr(ds, "name", "this dataset")
        raise ConfigError(f"{name}: no {what} (meta[{key!r}]); only ml-100k's loader keeps them")
    return found
