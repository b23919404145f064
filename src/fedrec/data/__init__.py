"""Datasets for federated recommendation and federated graph learning.

* :func:`load_dataset`, :func:`list_datasets`, :func:`dataset_info`, :func:`dataset_options` --
  by name (registry);
* :func:`ensure_files`, :func:`verify` -- fetch and check the files (download);
* :func:`partition_by_user`, :func:`partition_graph` -- split into per-party pieces (partition);
* :func:`feras_host_views` -- Feras's hosts: whole topology, visible attributes only (host_view);
* GraphSAINT samplers: :mod:`fedrec.data.sampling`;
* :func:`public_meta`, :func:`metadata_dataset` -- what a server may know of a dataset (types);
* the container types of :mod:`fedrec.data.types`.
"""

from fedrec.data.catalog import DatasetSpec
from fedrec.data.download import ensure_files, verify
from fedrec.data.host_view import HostView, assign_private_nodes, feras_host_views
from fedrec.data.partition import (
    ClientData,
    HostPartition,
    assign_nodes,
    partition_by_user,
    partition_graph,
)
from fedrec.data.paths import dataset_dir, default_data_dir, resolve_data_dir
from fedrec.data.registry import (
    dataset_info,
    dataset_options,
    describe,
    is_user_file,
    list_datasets,
    load_dataset,
)
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
    "HostView",
    "InteractionDataset",
    "Interactions",
    "RatingDataset",
    "assign_nodes",
    "assign_private_nodes",
    "dataset_dir",
    "dataset_info",
    "dataset_options",
    "dataset_type",
    "default_data_dir",
    "describe",
    "ensure_files",
    "feras_host_views",
    "is_metadata_only",
    "is_user_file",
    "list_datasets",
    "load_dataset",
    "metadata_dataset",
    "partition_by_user",
    "partition_graph",
    "public_meta",
    "resolve_data_dir",
    "verify",
]
