"""Dataset names -> loaders: :func:`load_dataset`, :func:`list_datasets`, :func:`dataset_info`,
:func:`dataset_options`."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from fedrec.data.catalog import SPECS, DatasetSpec, get_spec
from fedrec.data.download import ensure_files
from fedrec.data.loaders import (
    load_gnn_benchmark,
    load_graphsaint,
    load_lightgcn,
    load_mgcnn,
    load_ml100k,
    load_movielens_dat,
    load_planetoid,
    load_steam,
)
from fedrec.data.paths import resolve_data_dir
from fedrec.data.provenance import with_files_read
from fedrec.data.splits import VAL_FRACTION, carve_validation
from fedrec.data.types import Dataset, GraphDataset, RatingDataset
from fedrec.data.user_files import FILE_OPTIONS, is_file_name, load_interaction_file
from fedrec.data.user_graph import GRAPH_OPTIONS, is_graph_dir, load_graph_dir
from fedrec.errors import ConfigError

__all__ = ["DatasetSpec", "dataset_info", "dataset_options", "describe", "is_user_file",
           "list_datasets", "load_dataset"]

PathLike = str | os.PathLike[str]


def _mgcnn(file: str, lo: float, hi: float, step: float | None) -> Callable[..., Dataset]:
    def load(root: Path, name: str) -> Dataset:
        from fedrec.data.loaders._common import require_files

        require_files(name, root, [file])
        return load_mgcnn(root / file, name, lo, hi, step)

    return load


# Each loader is called as loader(root, **options) (plus name where it takes one).
_LOADERS: dict[str, Callable[..., Dataset]] = {
    "ml-100k": load_ml100k,
    "ml-1m": partial(load_movielens_dat, name="ml-1m", half_stars=False),
    "ml-10m": partial(load_movielens_dat, name="ml-10m", half_stars=True),
    "douban": partial(_mgcnn("training_test_dataset.mat", 1, 5, 1), name="douban"),
    "flixster": partial(_mgcnn("training_test_dataset_10_NNs.mat", 0.5, 5, 0.5), name="flixster"),
    "yahoo_music": partial(
        _mgcnn("training_test_dataset_10_NNs.mat", 1, 100, 1), name="yahoo_music"
    ),
    "gowalla": partial(load_lightgcn, name="gowalla"),
    "yelp2018": partial(load_lightgcn, name="yelp2018"),
    "amazon-book": partial(load_lightgcn, name="amazon-book"),
    "steam-200k": load_steam,
    "cora": partial(load_planetoid, name="cora"),
    "citeseer": partial(load_planetoid, name="citeseer"),
    "pubmed": partial(load_planetoid, name="pubmed"),
    "ppi": partial(load_graphsaint, name="ppi"),
    "flickr": partial(load_graphsaint, name="flickr"),
    "reddit": partial(load_graphsaint, name="reddit"),
    "cora-gnnbench": partial(load_gnn_benchmark, name="cora-gnnbench", file="cora.npz"),
    "citeseer-gnnbench": partial(load_gnn_benchmark, name="citeseer-gnnbench", file="citeseer.npz"),
}


def list_datasets() -> list[DatasetSpec]:
    """Every known dataset, in registry order."""
    return list(SPECS.values())


def _accepted_options(loader: Callable[..., Dataset]) -> list[str]:
    fixed = set(loader.keywords) if isinstance(loader, partial) else set()
    func = loader.func if isinstance(loader, partial) else loader
    params = list(inspect.signature(func).parameters.values())[1:]  # drop root
    return [p.name for p in params if p.name not in fixed and p.name != "name"]


#: Options every dataset takes (the validation split, applied after the loader), with their
#: descriptions as ``fedrec datasets info`` shows them.
COMMON_OPTIONS = {
    "val_fraction": f"validation share of each user's training rows (of the training nodes "
    f"of a graph without a val_mask), carved from training data only (default {VAL_FRACTION})",
    "val_seed": "seed of the validation split (default: the dataset's seed option, else 0)",
}


def load_dataset(
    name: str | os.PathLike[str], data_dir: PathLike | None = None, download: bool = False,
    **options: object,
) -> Dataset:
    """Load dataset ``name`` from ``<data_dir>/<dirname>/``, or a user's file.

    ``data_dir`` defaults to ``$FEDREC_DATA``, else the user cache (see :mod:`fedrec.data.paths`).
    Missing files raise a :class:`DataError` saying which files to put where, unless ``download``
    is true, in which case :func:`fedrec.data.download.ensure_files` fetches them first.
    ``options`` are dataset-specific (see ``DatasetSpec.options``) plus :data:`COMMON_OPTIONS`;
    an unknown name or option raises :class:`ConfigError`.

    A ``name`` that is not in the catalogue and looks like a path (a path object, a ``/``, a
    suffix, an existing file: :func:`fedrec.data.user_files.is_file_name`) is a user's file of
    ratings or interactions, read with the options of
    :data:`fedrec.data.user_files.FILE_OPTIONS` (``data_dir`` and ``download`` do not apply);
    a folder is a user's graph (:mod:`fedrec.data.user_graph`, options
    :data:`~fedrec.data.user_graph.GRAPH_OPTIONS`).

    Every dataset passes through :func:`fedrec.data.splits.carve_validation` here, the one
    place that makes the validation split: ``train`` of the result excludes the validation rows
    (``valid``; a graph's ``val_mask``); and through
    :func:`fedrec.data.provenance.with_files_read`, once per load: the files read, each with
    its size and sha256, in ``meta["files_read"]`` (what a run's ``results.json`` records).
    """
    if is_file_name(name, SPECS):
        path = Path(name)
        options, val_fraction, val_seed = _validation_options(str(path), options)
        graph = is_graph_dir(path)
        _refuse_unknown(str(path), options, list(GRAPH_OPTIONS if graph else FILE_OPTIONS))
        ds = load_graph_dir(path, **options) if graph else load_interaction_file(path, **options)
        return with_files_read(carve_validation(ds, val_fraction, val_seed), None)
    name = str(name)
    get_spec(name)
    loader = _LOADERS[name]
    options, val_fraction, val_seed = _validation_options(name, options)
    _refuse_unknown(name, options, _accepted_options(loader))
    extra = ["mgcnn/split_1.mat"] if name == "ml-100k" and options.get("split") == "mgcnn" else []
    root = ensure_files(name, data_dir, download=download)
    if extra:
        ensure_files(name, data_dir, download=download, files=extra)
    ds = carve_validation(loader(root, **options), val_fraction, val_seed)
    return with_files_read(ds, resolve_data_dir(data_dir))


def _validation_options(name: str, options: dict[str, object]
                        ) -> tuple[dict[str, object], float, int]:
    """``options`` without :data:`COMMON_OPTIONS`, and the validation fraction and seed."""
    options = dict(options)
    val_fraction = options.pop("val_fraction", VAL_FRACTION)
    val_seed = options.pop("val_seed", options.get("seed", 0))
    for key, value in (("val_fraction", val_fraction), ("val_seed", val_seed)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{name}: option {key} must be a number, got {value!r}")
    if not 0.0 <= float(val_fraction) < 1.0:
        raise ConfigError(f"{name}: val_fraction must be in [0, 1), got {val_fraction}")
    if int(val_seed) != val_seed:
        raise ConfigError(f"{name}: val_seed must be an integer, got {val_seed}")
    return options, float(val_fraction), int(val_seed)


def _refuse_unknown(name: str, options: dict[str, object], accepted: list[str]) -> None:
    accepted = [*accepted, *COMMON_OPTIONS]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(
            f"{name}: unknown option(s) {', '.join(unknown)}; accepted: "
            f"{', '.join(accepted) or 'none'}"
        )


def is_user_file(name: str | os.PathLike[str]) -> bool:
    """Whether ``load_dataset(name)`` reads a user's file rather than a catalogue dataset."""
    return is_file_name(name, SPECS)


def describe(ds: Dataset) -> dict[str, object]:
    """Printable summary of a loaded dataset (counts, sparsity, value range, feature dims)."""
    if isinstance(ds, GraphDataset):
        undirected = int(ds.edge_index.shape[1]) // 2
        n = ds.num_nodes
        return {
            "name": ds.name,
            "kind": "graph",
            "num_nodes": n,
            "num_edges": undirected,
            "num_features": int(ds.x.shape[1]),
            "num_classes": ds.num_classes,
            "multilabel": ds.multilabel,
            "num_train": int(ds.train_mask.sum()),
            "num_val": int(ds.val_mask.sum()),
            "validation": ds.meta.get("validation"),
            "num_test": int(ds.test_mask.sum()),
            "density": 2 * undirected / (n * (n - 1)) if n > 1 else 0.0,
            "split": ds.meta.get("split"),
        }
    n_obs = len(ds.train) + len(ds.valid) + len(ds.test)
    cells = ds.num_users * ds.num_items
    values = np.concatenate([ds.train.values, ds.valid.values, ds.test.values])
    info: dict[str, object] = {
        "name": ds.name,
        "kind": "rating" if isinstance(ds, RatingDataset) else "interaction",
        "num_users": ds.num_users,
        "num_items": ds.num_items,
        "num_train": len(ds.train),
        "num_valid": len(ds.valid),
        "num_test": len(ds.test),
        "num_clients": len(ds.user_ids()),
        "density": n_obs / cells if cells else 0.0,
        "sparsity": 1 - n_obs / cells if cells else 1.0,
        "user_feature_dim": None if ds.user_features is None else int(ds.user_features.shape[1]),
        "item_feature_dim": None if ds.item_features is None else int(ds.item_features.shape[1]),
        "user_graph_edges": None if ds.user_graph is None else int(ds.user_graph.nnz),
        "item_graph_edges": None if ds.item_graph is None else int(ds.item_graph.nnz),
        "split": ds.meta.get("split"),
        "source": ds.meta.get("source"),
    }
    if isinstance(ds, RatingDataset):
        info["rating_range"] = (ds.rating_min, ds.rating_max)
        info["observed_range"] = (float(values.min()), float(values.max())) if len(values) else None
    return info


def dataset_options(name: str | os.PathLike[str]) -> dict[str, str]:
    """Every option ``load_dataset(name, ...)`` (``--data-opt KEY=VALUE``) takes, with what it
    does: the catalogue's :attr:`DatasetSpec.options` (a user's file:
    :data:`~fedrec.data.user_files.FILE_OPTIONS`; a graph folder:
    :data:`~fedrec.data.user_graph.GRAPH_OPTIONS`), then :data:`COMMON_OPTIONS`. Reads no
    data; an unknown catalogue name is a :class:`ConfigError`."""
    if is_file_name(name, SPECS):
        own = GRAPH_OPTIONS if is_graph_dir(Path(name)) else FILE_OPTIONS
    else:
        own = get_spec(str(name)).options
    return {**own, **COMMON_OPTIONS}


def dataset_info(
    name: str | os.PathLike[str], data_dir: PathLike | None = None, **options: object
) -> dict[str, object]:
    """Load ``name`` and return :func:`describe` of it plus the spec's description and citation
    (a user's file: its options instead)."""
    info = describe(load_dataset(name, data_dir, **options))
    if is_user_file(name):
        info.update(options=", ".join(f"{k}={v}" for k, v in options.items()) or "defaults")
        return info
    spec = get_spec(str(name))
    info.update(description=spec.description, url=spec.url, citation=spec.citation)
    return info
