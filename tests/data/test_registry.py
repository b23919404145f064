"""Registry: names, specs, unknown names/options, dataset_info for the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedrec.data import dataset_info, list_datasets, load_dataset
from fedrec.data.catalog import get_spec
from fedrec.errors import ConfigError

REQUIRED = {"ml-100k", "ml-1m", "ml-10m", "douban", "flixster", "yahoo_music", "gowalla",
            "yelp2018", "amazon-book", "steam-200k", "cora", "citeseer", "pubmed", "ppi",
            "flickr", "reddit"}  # fmt: skip


def test_names_and_specs() -> None:
    specs = list_datasets()
    assert REQUIRED <= {s.name for s in specs}
    for s in specs:
        assert s.kind in ("rating", "interaction", "graph") and s.files and s.citation
        assert s.description and s.dirname
    assert get_spec("ml-100k").url == "https://files.grouplens.org/datasets/movielens/ml-100k.zip"
    assert get_spec("cora").dirname == "planetoid"


def test_every_spec_has_a_loader() -> None:
    from fedrec.data.registry import _LOADERS

    assert set(_LOADERS) == {s.name for s in list_datasets()}


def test_unknown_name_lists_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        load_dataset("movielens-20m")
    assert "unknown dataset 'movielens-20m'" in str(err.value) and "gowalla" in str(err.value)


def test_unknown_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"gowalla: unknown option\(s\) split; accepted: "
                                          r"val_fraction, val_seed$"):
        load_dataset("gowalla", tmp_path, split="u1")
    with pytest.raises(ConfigError, match="accepted: behavior, k_core, test_fraction, seed, "
                                          "val_fraction, val_seed"):
        load_dataset("steam-200k", tmp_path, k=3)


def test_dataset_info(data_root: Path, need) -> None:
    need(data_root / "ml-100k", "u.data", "u.user", "u.item", "u1.test")
    info = dataset_info("ml-100k", data_root)
    # u1's 80,000 training ratings, 10% of each user's held out for validation (floor, >= 1).
    assert (info["num_users"], info["num_items"], info["num_train"] + info["num_valid"],
            info["num_test"]) == (943, 1682, 80_000, 20_000)  # fmt: skip
    assert info["num_valid"] == 7592
    assert info["rating_range"] == (1.0, 5.0) and info["observed_range"] == (1.0, 5.0)
    assert info["user_feature_dim"] == 24 and info["item_feature_dim"] == 19
    assert abs(info["sparsity"] - (1 - 100_000 / (943 * 1682))) < 1e-12
    assert "Harper" in info["citation"]


def test_dataset_info_graph(data_root: Path, need) -> None:
    need(data_root / "planetoid", "ind.cora.x", "ind.cora.allx", "ind.cora.graph")
    info = dataset_info("cora", data_root)
    assert (info["num_nodes"], info["num_edges"], info["num_features"], info["num_classes"]) == (
        2708, 5278, 1433, 7)  # fmt: skip
    assert (info["num_train"], info["num_val"], info["num_test"]) == (140, 500, 1000)
