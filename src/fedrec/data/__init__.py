"""Datasets for federated recommendation and federated graph learning.

* :func:`load_dataset`, :func:`list_datasets`, :func:`dataset_info` -- by name (registry);
* :func:`ensure_files`, :func:`verify` -- fetch and check the files (download);
* :func:`partition_by_user`, :func:`partition_graph` -- split into per-party pieces (partition);
* :func:`public_meta`, :func:`metadata_dataset` -- what a server may know of a dataset (types);
* the container types of :mod:`fedrec.data.types`.
"""

from fedrec.data.catalog import DatasetSpec
from fedrec.data.download import ensure_files, verify
from fedrec.data.partition import (
    ClientData,
    HostPartition,
    assign_nodes,
    partition_by_user,
    partition_graph,
)
from fedrec.data.paths import dataset_dir, default_data_dir, resolve_data_dir
from fedrec.data.registry import dataset_info, describe, list_datasets, load_dataset
from fedrec.data.types import (
    Dataset,
    GraphDataset,
    InteractionDataset,
    Interactions,
    RatingDataset,
    dataset_type,
    is_metadata_only,
    metadata_dataset,
    public_meta,
)

__all__ = [
    "ClientData",
    "Dataset",
    "DatasetSpec",
    "GraphDataset",
    "HostPartition",
    "InteractionDataset",
    "Interactions",
    "RatingDataset",
    "assign_nodes",
    "dataset_dir",
    "dataset_info",
    "dataset_type",
    "default_data_dir",
    "describe",
    "ensure_files",
    "is_metadata_only",
    "list_datasets",
    "load_dataset",
    "metadata_dataset",
    "partition_by_user",
    "partition_graph",
    "public_meta",
    "resolve_data_dir",
    "verify",
]
