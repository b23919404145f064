"""What a run's data were: the record ``results.json`` keeps under ``data``.

:func:`with_files_read` is applied by :func:`fedrec.data.load_dataset` to every dataset it
returns, once per load: for each file the loader read (its ``meta["files"]``), the path
(relative to the data root where the file lies under it, else as the loader names it: a user's
file as given), its size in bytes and its sha256, streamed in 1 MiB chunks
(:func:`fedrec.data.download.file_digest`), kept in ``meta["files_read"]``. Two runs whose
records list the same digests read byte-identical files.

:func:`data_record` is the record itself: the name or path the user gave, where the files were
looked for, the files read, the loader and format (``meta["source"]``, e.g. ML-100K's
``GroupLens files (...)`` or its fallback ``RecBole atomic files (...)``), the split (its name
and parameters as the loader states them, the options given, the validation split carved from
the training rows) and the counts of the data as loaded (after any slice). A dataset made in
memory (tests, synthetic data, anything not returned by ``load_dataset``) has no
``meta["files_read"]``, and its record says so (``origin``: ``"in memory"``) rather than
inventing files.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fedrec.data.download import file_digest
from fedrec.data.types import Dataset, GraphDataset, RatingDataset
from fedrec.errors import DataError

#: Where a loaded dataset keeps the files it was read from (:func:`with_files_read`).
FILES_READ = "files_read"
#: The data root those paths are relative to (None: a user's file, named as given).
FILES_ROOT = "files_root"
#: ``origin`` of a dataset that ``load_dataset`` did not read from files.
IN_MEMORY = "in memory (not read from files by fedrec.data.load_dataset: nothing to hash)"


def files_read(paths: Iterable[str | os.PathLike[str]], root: Path | None) -> list[dict[str, Any]]:
    """``[{"path", "bytes", "sha256"}]`` of ``paths`` (module docstring): each path relative
    to ``root`` when under it (POSIX separators), else as given; one streamed pass per file."""
    out = []
    for raw in paths:
        path = Path(raw)
        shown = path.as_posix()
        if root is not None:
            try:
                # Not resolved: a file linked in from elsewhere is named where it was read.
                shown = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
            except ValueError:
                pass
        try:
            out.append({"path": shown, "bytes": path.stat().st_size,
                        "sha256": file_digest(path, "sha256")})
        except OSError as exc:  # removed or made unreadable since the loader read it
            raise DataError(f"{path}: cannot be read again to record its sha256 "
                            f"({exc.strerror or exc})") from None
    return out


def with_files_read(ds: Dataset, root: Path | None) -> Dataset:
    """``ds`` with ``meta["files_read"]`` (:func:`files_read` of its ``meta["files"]``,
    relative to ``root``, the data root; None for a user's file)."""
    record = files_read(ds.meta.get("files", ()), root)
    return dataclasses.replace(ds, meta={**ds.meta, FILES_READ: record,
                                         FILES_ROOT: str(root) if root is not None else None})


def data_counts(ds: Dataset) -> dict[str, int]:
    """The sizes of ``ds`` as a run sees it: users, items, clients (users with training rows)
    and train/valid/test rows; a graph's nodes, edge-index columns, features, classes and
    train/val/test nodes."""
    if isinstance(ds, GraphDataset):
        return {"nodes": ds.num_nodes, "edge_index_columns": int(ds.edge_index.shape[1]),
                "features": int(ds.x.shape[1]), "classes": ds.num_classes,
                "train_nodes": int(ds.train_mask.sum()), "val_nodes": int(ds.val_mask.sum()),
                "test_nodes": int(ds.test_mask.sum())}
    return {"users": ds.num_users, "items": ds.num_items, "clients": len(ds.user_ids()),
            "train_rows": len(ds.train), "valid_rows": len(ds.valid), "test_rows": len(ds.test)}


def data_record(ds: Dataset, given: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's data were (module docstring): ``given`` (the name or path as the user gave
    it), ``options`` (the dataset options given, e.g. ``{"split": "u3"}``; a deployment's
    ``max_users``); ``data_root``, where the catalogue's files were found (None: a user's file,
    or data made in memory)."""
    files = ds.meta.get(FILES_READ)
    if isinstance(ds, RatingDataset):
        kind = "rating"
    else:
        kind = "graph" if isinstance(ds, GraphDataset) else "interaction"
    return {
        "given": given,
        "name": ds.name,
        "kind": kind,
        "origin": "files" if files is not None else IN_MEMORY,
        "data_root": ds.meta.get(FILES_ROOT),
        "files": list(files) if files is not None else [],
        "loader": ds.meta.get("source"),
        "split": {"name": ds.meta.get("split"), "options": dict(options),
                  "validation": ds.meta.get("validation")},
        "counts": data_counts(ds),
        "warnings": list(ds.meta.get("warnings") or ()),  # what the loader printed of the files
    }
