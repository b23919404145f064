"""Full-ranking top-K metrics for implicit feedback (LightGCN conventions).

For a user ``u`` with test items ``T_u`` (``|T_u| > 0``) and a ranked list ``r_1, r_2, ...`` of
items from which ``u``'s training items have been removed, let ``rel_i = 1[r_i in T_u]`` and
``hits_u@K = sum_{i=1..K} rel_i``. Then

* ``Recall@K    = hits_u@K / |T_u|``
* ``Precision@K = hits_u@K / K``
* ``HitRate@K   = 1[hits_u@K > 0]``
* ``NDCG@K      = DCG / IDCG`` with binary relevance,
  ``DCG = sum_{i=1..K} rel_i / log2(i + 1)`` and
  ``IDCG = sum_{i=1..min(|T_u|, K)} 1 / log2(i + 1)``
  (with zero-based ranks ``j = i - 1`` the discount is ``1 / log2(j + 2)``).

Every metric is averaged over the users with at least one test item; users without test items are
skipped (they are neither counted nor in the denominator). ``|T_u|`` is the full size of the test
set as given, so a test item that is also a training item of ``u`` stays in the denominator but can
never be hit (training items are excluded from the ranking).

:func:`evaluate_topk` scores users in batches with a model's ``score_fn``; :func:`ranked_hits`,
:func:`topk_metrics_from_hits` and :func:`topk_metrics_from_ranked` work directly on arrays of
already-ranked items.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp
import torch

from fedrec.errors import ConfigError
from fedrec.metrics._inputs import ArrayLike, to_numpy

RANKING_METRICS: tuple[str, ...] = ("Recall", "Precision", "NDCG", "HitRate")
"""Names of the metrics; result keys are ``f"{name}@{k}"``, e.g. ``"NDCG@20"``."""

ScoreFn = Callable[[torch.Tensor], torch.Tensor]
"""``score_fn(user_ids: LongTensor[B]) -> Tensor[B, num_items]`` of scores (higher is better)."""


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def _check_ks(ks: int | Iterable[int], limit: int, limit_what: str) -> tuple[int, ...]:
    """Validate cut-offs: positive ints, none above ``limit``; duplicates dropped, order kept."""
    if isinstance(ks, numbers.Integral) and not isinstance(ks, bool):
        ks = (int(ks),)
    try:
        ks_list = list(ks)  # type: ignore[arg-type]
    except TypeError:
        raise ConfigError(f"ks must be an int or a sequence of ints, got {ks!r}") from None
    if not ks_list:
        raise ConfigError("ks is empty: give at least one cut-off K")
    out: list[int] = []
    for k in ks_list:
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise ConfigError(f"K must be an int, got {k!r}")
        k = int(k)
        if k <= 0:
            raise ConfigError(f"K must be positive, got {k}")
        if k > limit:
            raise ConfigError(f"K={k} is larger than {limit_what} ({limit})")
        if k not in out:
            out.append(k)
    return tuple(out)


def _canonical_csr(m: object, name: str) -> sp.csr_matrix:
    """Copy ``m`` into a CSR matrix with sorted, duplicate-free indices and no explicit zeros."""
    if not sp.issparse(m):
        raise ConfigError(f"{name} must be a scipy.sparse matrix, got {type(m).__name__}")
    if m.ndim != 2:  # type: ignore[attr-defined]
        raise ConfigError(f"{name} must be 2-D")
    c = sp.csr_matrix(m, copy=True)
    c.sum_duplicates()
    c.eliminate_zeros()
    c.sort_indices()
    c.indptr = c.indptr.astype(np.int64, copy=False)
    c.indices = c.indices.astype(np.int64, copy=False)
    return c


def _rows_cols(m: sp.csr_matrix, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(local_row, col)`` of the non-zeros of ``m[rows]``; local rows index into ``rows``.

    Within each local row the columns are ascending, so ``local_row * n_cols + col`` is sorted.
    """
    starts = m.indptr[rows]
    lengths = m.indptr[rows + 1] - starts
    total = int(lengths.sum())
    local = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    if total == 0:
        return local, np.empty(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    flat = np.arange(total, dtype=np.int64) - np.repeat(offsets - starts, lengths)
    return local, m.indices[flat]


# --------------------------------------------------------------------------------------------
# Vectorised core (torch, on any device)
# --------------------------------------------------------------------------------------------


def _hits_from_keys(topk_items: torch.Tensor, pos_keys: torch.Tensor, n_cols: int) -> torch.Tensor:
    """Boolean ``(B, L)``: is ``topk_items[b, j]`` a positive of row ``b``?

    ``pos_keys`` is the sorted 1-D tensor of ``row * n_cols + item`` of the positives. Negative
    item ids (padding) are never hits.
    """
    b = topk_items.shape[0]
    if pos_keys.numel() == 0:
        return torch.zeros(topk_items.shape, dtype=torch.bool, device=topk_items.device)
    rows = torch.arange(b, dtype=torch.int64, device=topk_items.device).unsqueeze(1)
    q = rows * n_cols + topk_items
    idx = torch.searchsorted(pos_keys, q).clamp_(max=pos_keys.numel() - 1)
    return (pos_keys[idx] == q) & (topk_items >= 0)


def _metric_rows(hits: torch.Tensor, num_test: torch.Tensor, ks: Sequence[int]) -> torch.Tensor:
    """Per-row metric values, ``(U, len(ks) * 4)`` float64 (all rows must have ``num_test > 0``).

    Columns are laid out as ``[m for k in ks for m in RANKING_METRICS]``.
    """
    length = hits.shape[1]
    dev = hits.device
    disc = 1.0 / torch.log2(torch.arange(length, dtype=torch.float64, device=dev) + 2.0)
    idcg_table = torch.cumsum(disc, 0)
    h = hits.to(torch.float64)
    cum_hits = h.cumsum(1)
    cum_dcg = (h * disc).cumsum(1)
    nt = num_test.to(device=dev, dtype=torch.int64)
    ntf = nt.to(torch.float64)
    cols = []
    for k in ks:
        nh = cum_hits[:, k - 1]
        idcg = idcg_table[torch.clamp(nt, max=k) - 1]
        cols += [nh / ntf, nh / k, cum_dcg[:, k - 1] / idcg, (nh > 0).to(torch.float64)]
    return torch.stack(cols, dim=1)


def _metric_sums(hits: torch.Tensor, num_test: torch.Tensor, ks: Sequence[int]) -> np.ndarray:
    """Per-metric sums over the rows of ``hits`` (layout of :func:`_metric_rows`)."""
    return _metric_rows(hits, num_test, ks).sum(0).cpu().numpy()


def per_user_topk_metrics(
    hits: ArrayLike, num_test: ArrayLike, ks: int | Iterable[int] = (20,)
) -> dict[str, np.ndarray]:
    """Each user's own Recall/Precision/NDCG/HitRate@K (0 for users without test items).

    Inputs as in :func:`topk_metrics_from_hits`. A federated client evaluates itself with this
    and reports only its own values.
    """
    h = torch.as_tensor(to_numpy(hits, "hits")).to(torch.bool)
    nt = torch.as_tensor(to_numpy(num_test, "num_test")).to(torch.int64)
    kt = _check_ks(ks, h.shape[1], "the ranked list length")
    rows = _metric_rows(h, nt.clamp(min=1), kt)
    rows[nt == 0] = 0.0
    names = [f"{m}@{k}" for k in kt for m in RANKING_METRICS]
    return {name: rows[:, j].numpy() for j, name in enumerate(names)}


def _result(sums: np.ndarray, n_users: int, ks: Sequence[int]) -> dict[str, float]:
    names = [f"{m}@{k}" for k in ks for m in RANKING_METRICS]
    return {name: float(s) / n_users for name, s in zip(names, sums, strict=True)}


# --------------------------------------------------------------------------------------------
# Array-level helpers
# --------------------------------------------------------------------------------------------


def _test_rows_cols(test_sets: object, n_rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(local_row, item, |T_u| per row) of ``test_sets`` (a sparse matrix or a sequence of sets)."""
    if sp.issparse(test_sets):
        m = _canonical_csr(test_sets, "test_sets")
        if m.shape[0] != n_rows:
            raise ConfigError(f"test_sets has {m.shape[0]} rows but topk_items has {n_rows} rows")
        rows, cols = _rows_cols(m, np.arange(n_rows, dtype=np.int64))
        return rows, cols, np.diff(m.indptr)
    if isinstance(test_sets, str | bytes) or not isinstance(test_sets, Sequence | np.ndarray):
        raise ConfigError(
            "test_sets must be a scipy.sparse matrix or a sequence of item-id collections"
        )
    if len(test_sets) != n_rows:
        raise ConfigError(
            f"test_sets has {len(test_sets)} entries but topk_items has {n_rows} rows"
        )
    row_parts: list[np.ndarray] = []
    col_parts: list[np.ndarray] = []
    sizes = np.zeros(n_rows, dtype=np.int64)
    for r, s in enumerate(test_sets):
        items = s if isinstance(s, np.ndarray | torch.Tensor) else list(s)
        arr = to_numpy(items, "test_sets").ravel()
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise ConfigError(f"test_sets[{r}] must hold integer item ids, got dtype {arr.dtype}")
        arr = np.unique(arr.astype(np.int64, copy=False))
        if arr.size and arr[0] < 0:
            raise ConfigError(f"test_sets[{r}] has a negative item id {int(arr[0])}")
        sizes[r] = arr.size
        row_parts.append(np.full(arr.size, r, dtype=np.int64))
        col_parts.append(arr)
    if not row_parts:
        return np.empty(0, np.int64), np.empty(0, np.int64), sizes
    return np.concatenate(row_parts), np.concatenate(col_parts), sizes


def _as_ranked(topk_items: ArrayLike) -> np.ndarray:
    items = to_numpy(topk_items, "topk_items")
    if items.ndim != 2:
        raise ConfigError(f"topk_items must be 2-D (users, ranked items), got shape {items.shape}")
    if items.size and not np.issubdtype(items.dtype, np.integer):
        raise ConfigError(f"topk_items must hold integer item ids, got dtype {items.dtype}")
    items = items.astype(np.int64, copy=False)
    if items.shape[1] > 1:
        s = np.sort(items, axis=1)
        dup = (s[:, 1:] == s[:, :-1]) & (s[:, 1:] >= 0)
        if dup.any():
            r = int(np.flatnonzero(dup.any(axis=1))[0])
            raise ConfigError(f"topk_items repeats an item in row {r}")
    return items


def ranked_hits(topk_items: ArrayLike, test_sets: object) -> np.ndarray:
    """Boolean ``(U, L)`` array: ``hits[u, j] = topk_items[u, j] in test_sets[u]``.

    ``topk_items`` is ``(U, L)`` integer item ids, best first (negative ids are padding and never
    hit; an item may not repeat within a row). ``test_sets`` is a ``(U, num_items)``
    ``scipy.sparse`` matrix (non-zeros are the test items) or a length-``U`` sequence of item-id
    collections (sets, lists, arrays). Vectorised with one ``searchsorted`` over all rows.
    """
    items = _as_ranked(topk_items)
    rows, cols, _ = _test_rows_cols(test_sets, items.shape[0])
    return _ranked_hits_np(items, rows, cols)


def _ranked_hits_np(items: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    n_cols = int(max(items.max(initial=-1), cols.max(initial=-1))) + 1
    keys = np.unique(rows * max(n_cols, 1) + cols)
    hits = _hits_from_keys(torch.from_numpy(items), torch.from_numpy(keys), max(n_cols, 1))
    return hits.numpy()


def topk_metrics_from_hits(
    hits: ArrayLike, num_test: ArrayLike, ks: int | Iterable[int] = (20,)
) -> dict[str, float]:
    """Recall/Precision/NDCG/HitRate@K from a boolean hit matrix.

    ``hits`` is ``(U, L)`` (``hits[u, j]``: the item at rank ``j`` of user ``u`` is a test item;
    training items already removed from the ranking) and ``num_test`` is ``(U,)`` with
    ``|T_u|``. Users with ``num_test == 0`` are skipped; every ``K`` must be ``<= L``. Returns
    the means over the remaining users, keyed ``f"{metric}@{K}"``.
    """
    h = to_numpy(hits, "hits")
    nt = to_numpy(num_test, "num_test")
    if h.ndim != 2:
        raise ConfigError(f"hits must be 2-D (users, ranks), got shape {h.shape}")
    if nt.ndim != 1 or nt.shape[0] != h.shape[0]:
        raise ConfigError(
            f"num_test must have shape ({h.shape[0]},) to match hits, got {tuple(nt.shape)}"
        )
    if h.size and not np.isin(h, (0, 1)).all():
        raise ConfigError("hits must be boolean (0/1)")
    if nt.size and (not np.issubdtype(nt.dtype, np.integer) or nt.min() < 0):
        raise ConfigError("num_test must hold non-negative integers")
    kt = _check_ks(ks, h.shape[1], "the ranked list length")
    h = h.astype(bool)
    nt = nt.astype(np.int64)
    if (h.sum(axis=1) > nt).any():
        raise ConfigError("hits has more hits in a row than that user's num_test")
    keep = nt > 0
    n_users = int(keep.sum())
    if n_users == 0:
        raise ConfigError("no user has test items")
    sums = _metric_sums(torch.from_numpy(h[keep]), torch.from_numpy(nt[keep]), kt)
    return _result(sums, n_users, kt)


def topk_metrics_from_ranked(
    topk_items: ArrayLike, test_sets: object, ks: int | Iterable[int] = (20,)
) -> dict[str, float]:
    """Recall/Precision/NDCG/HitRate@K of already-ranked lists (see the module docstring).

    ``topk_items`` (``(U, L)``, best first, training items already removed) and ``test_sets`` are
    as in :func:`ranked_hits`; ``|T_u|`` is the number of distinct test items of row ``u``. Rows
    with an empty test set are skipped; ``K > L`` raises :class:`~fedrec.errors.ConfigError`.
    """
    items = _as_ranked(topk_items)
    rows, cols, sizes = _test_rows_cols(test_sets, items.shape[0])
    hits = _ranked_hits_np(items, rows, cols)
    return topk_metrics_from_hits(hits, sizes, ks)


# --------------------------------------------------------------------------------------------
# Full-ranking evaluation of a model
# --------------------------------------------------------------------------------------------


@torch.no_grad()
def evaluate_topk(
    score_fn: ScoreFn,
    train_csr: sp.spmatrix | sp.sparray | None,
    test_csr: sp.spmatrix | sp.sparray,
    ks: int | Iterable[int] = (20,),
    batch_size: int = 2048,
    device: torch.device | str | None = None,
) -> dict[str, float]:
    """Full-ranking top-K evaluation of a recommender over all items.

    For each batch of (at most ``batch_size``) users with at least one test item, ``score_fn`` is
    called with their ids as a ``LongTensor`` on ``device`` (default CPU) and must return
    ``(B, num_items)`` scores (higher is better). The user's training items (non-zeros of
    ``train_csr``; ``None`` excludes nothing) are set to ``-inf``, ``torch.topk`` takes the
    ``max(ks)`` best items and hits are found with one ``searchsorted`` against the batch's sorted
    ``user * num_items + item`` test keys. ``score_fn``'s output is not modified in place.

    Returns ``{"Recall@K", "Precision@K", "NDCG@K", "HitRate@K"}`` for every ``K`` in ``ks``,
    averaged over users with test items (formulas in the module docstring). Ties between equal
    scores are broken by ``torch.topk`` (unspecified order).

    Raises :class:`~fedrec.errors.ConfigError` when ``K <= 0`` or ``K > num_items``, the
    matrices' shapes differ, ``score_fn`` returns the wrong shape or NaN, or no user has a test
    item.
    """
    test = _canonical_csr(test_csr, "test_csr")
    num_items = test.shape[1]
    train: sp.csr_matrix | None = None
    if train_csr is not None:
        train = _canonical_csr(train_csr, "train_csr")
        if train.shape != test.shape:
            raise ConfigError(
                f"train_csr has shape {train.shape} but test_csr has shape {test.shape}"
            )
    kt = _check_ks(ks, num_items, "the number of items")
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
        raise ConfigError(f"batch_size must be an int, got {batch_size!r}")
    if batch_size <= 0:
        raise ConfigError(f"batch_size must be positive, got {batch_size}")
    dev = torch.device(device) if device is not None else torch.device("cpu")
    kmax = max(kt)

    n_test = np.diff(test.indptr)
    users = np.flatnonzero(n_test > 0).astype(np.int64)
    if users.size == 0:
        raise ConfigError("no user has test items")

    sums = np.zeros(len(kt) * len(RANKING_METRICS), dtype=np.float64)
    for start in range(0, users.size, int(batch_size)):
        bu = users[start : start + int(batch_size)]
        b = bu.size
        scores = score_fn(torch.from_numpy(bu).to(dev))
        if not isinstance(scores, torch.Tensor):
            raise ConfigError(f"score_fn must return a torch.Tensor, got {type(scores).__name__}")
        if tuple(scores.shape) != (b, num_items):
            raise ConfigError(
                f"score_fn returned shape {tuple(scores.shape)}, expected ({b}, {num_items})"
            )
        scores = scores.detach().to(dev)
        if not scores.is_floating_point():
            scores = scores.to(torch.float32)
        if torch.isnan(scores).any():
            raise ConfigError("score_fn returned NaN scores")

        t_rows, t_cols = _rows_cols(test, bu)
        test_keys = t_rows * num_items + t_cols
        if train is not None:
            r_rows, r_cols = _rows_cols(train, bu)
            if r_rows.size:
                idx = (torch.from_numpy(r_rows).to(dev), torch.from_numpy(r_cols).to(dev))
                neg_inf = torch.tensor(float("-inf"), dtype=scores.dtype, device=dev)
                scores = scores.index_put(idx, neg_inf)  # out of place: caller's tensor intact
                # A test item that is also a training item is excluded from the ranking, so it
                # can never be a hit (even if it reaches the top-K among -inf scores).
                overlap = np.isin(test_keys, r_rows * num_items + r_cols, assume_unique=True)
                if overlap.any():
                    test_keys = test_keys[~overlap]

        topk_items = torch.topk(scores, kmax, dim=1, largest=True, sorted=True).indices
        hits = _hits_from_keys(topk_items, torch.from_numpy(test_keys).to(dev), num_items)
        sums += _metric_sums(hits, torch.from_numpy(n_test[bu]), kt)

    return _result(sums, int(users.size), kt)
