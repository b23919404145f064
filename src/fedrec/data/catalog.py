"""Static facts about every dataset fedrec knows: kind, folder, files, canonical URL and citation.

This module holds data only (no I/O), so that :mod:`fedrec.data.registry` (loading) and
:mod:`fedrec.data.download` (fetching and checking files) can share it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from fedrec.errors import ConfigError

Kind = Literal["rating", "interaction", "graph"]


@dataclass(frozen=True)
class DatasetSpec:
    """Description of one dataset.

    ``files`` are the files the loader needs, relative to ``<data_dir>/<dirname>/``.
    ``alternatives`` are further complete file sets the loader also accepts instead of ``files``
    (ML-100K can be read from RecBole's atomic files). ``optional_files`` are read when present.
    ``url`` is the canonical download or landing page, ``None`` where none exists.
    """

    name: str
    kind: Kind
    description: str
    files: tuple[str, ...]
    url: str | None
    citation: str
    dirname: str
    optional_files: tuple[str, ...] = ()
    alternatives: tuple[tuple[str, ...], ...] = ()
    options: dict[str, str] = field(default_factory=dict, hash=False)
    license: str = ""

    def file_sets(self) -> tuple[tuple[str, ...], ...]:
        """Every complete set of files the loader accepts, preferred first."""
        return (self.files, *self.alternatives)


_ML_CITE = (
    "F. Maxwell Harper and Joseph A. Konstan. The MovieLens Datasets: History and Context. "
    "ACM TiiS 5(4), 2015."
)
_MGCNN_CITE = (
    "Federico Monti, Michael M. Bronstein, Xavier Bresson. Geometric Matrix Completion with "
    "Recurrent Multi-Graph Neural Networks. NIPS 2017."
)
_NGCF_CITE = (
    "Xiang Wang et al. Neural Graph Collaborative Filtering. SIGIR 2019; Xiangnan He et al. "
    "LightGCN. SIGIR 2020."
)
_PLANETOID_CITE = (
    "Zhilin Yang, William W. Cohen, Ruslan Salakhutdinov. Revisiting Semi-Supervised Learning "
    "with Graph Embeddings. ICML 2016."
)
_SAINT_CITE = (
    "Hanqing Zeng et al. GraphSAINT: Graph Sampling Based Inductive Learning Method. ICLR 2020."
)
_SHCHUR_CITE = (
    "Oleksandr Shchur et al. Pitfalls of Graph Neural Network Evaluation. "
    "Relational Representation Learning Workshop, NeurIPS 2018."
)
_GROUPLENS_LICENSE = "GroupLens terms: research use, no redistribution without permission"

_ML100K_GROUPLENS = ("u.data", "u.user", "u.item")
_ML100K_RECBOLE = ("recbole/ml-100k.inter", "recbole/ml-100k.user", "recbole/ml-100k.item")
_ML100K_SPLITS = tuple(f"u{k}.{part}" for k in range(1, 6) for part in ("base", "test"))

_LIGHTGCN_FILES = ("train.txt", "test.txt")
_LIGHTGCN_OPTIONAL = ("user_list.txt", "item_list.txt")
_PLANETOID_SUFFIXES = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
_SAINT_FILES = ("adj_full.npz", "feats.npy", "class_map.json", "role.json")
_SAINT_OPTIONS = {"standardize": "z-score features with training-node statistics (default False)"}


def _planetoid(name: str, title: str, description: str) -> DatasetSpec:
    return DatasetSpec(
        name=name,
        kind="graph",
        description=f"{title}: {description}; Planetoid public split (or a random 60/20/20)",
        files=tuple(f"ind.{name}.{s}" for s in _PLANETOID_SUFFIXES),
        url="https://github.com/kimiyoung/planetoid",
        citation=_PLANETOID_CITE,
        dirname="planetoid",
        license="MIT (planetoid repository); LINQS data",
        options={"split": "'public' (default: Planetoid's train/500 val/test) or 'random' "
                          "(60/20/20 of the labelled nodes)",
                 "seed": "seed of split='random' (default 0)"},
    )


def _saint(name: str, description: str, multilabel: bool) -> DatasetSpec:
    return DatasetSpec(
        name=name,
        kind="graph",
        description=description + (" (multi-label)" if multilabel else ""),
        files=_SAINT_FILES,
        url="https://github.com/GraphSAINT/GraphSAINT",
        citation=_SAINT_CITE,
        dirname=name,
        options=dict(_SAINT_OPTIONS),
        license="see the GraphSAINT repository (data shared via Google Drive)",
    )


def _lightgcn(
    name: str, description: str, cite: str, optional: tuple[str, ...] = ()
) -> DatasetSpec:
    return DatasetSpec(
        name=name,
        kind="interaction",
        description=description + "; NGCF/LightGCN 80/20 split (train.txt/test.txt)",
        files=_LIGHTGCN_FILES,
        url=f"https://github.com/gusye1234/LightGCN-PyTorch/tree/master/data/{name}",
        citation=cite + " Split: " + _NGCF_CITE,
        dirname=name,
        optional_files=_LIGHTGCN_OPTIONAL + optional,
        license="research use",
    )


SPECS: dict[str, DatasetSpec] = {
    s.name: s
    for s in [
        DatasetSpec(
            name="ml-100k",
            kind="rating",
            description="MovieLens 100K: 943 users, 1,682 movies, 100,000 ratings 1..5; user/item "
            "features; u1..u5 splits",
            files=_ML100K_GROUPLENS,
            alternatives=(_ML100K_RECBOLE,),
            optional_files=(*_ML100K_SPLITS, "mgcnn/split_1.mat"),
            url="https://files.grouplens.org/datasets/movielens/ml-100k.zip",
            citation=_ML_CITE,
            dirname="ml-100k",
            options={
                "split": "'u1'..'u5' (GroupLens files), 'random' or 'mgcnn' (default u1 when "
                "present, else random 80/20)",
                "test_fraction": "test share for split='random' (default 0.1; 0.2 when u1.test "
                "is absent); giving it alone selects split='random'",
                "seed": "seed of the random split (default 0)",
                "source": "'auto', 'grouplens' or 'recbole' (default auto)",
            },
            license=_GROUPLENS_LICENSE,
        ),
        DatasetSpec(
            name="ml-1m",
            kind="rating",
            description="MovieLens 1M: 6,040 users, 3,883 movies, 1,000,209 ratings 1..5; "
            "user/item features; random split",
            files=("ratings.dat",),
            optional_files=("users.dat", "movies.dat", "README"),
            url="https://files.grouplens.org/datasets/movielens/ml-1m.zip",
            citation=_ML_CITE,
            dirname="ml-1m",
            options={"test_fraction": "default 0.1", "seed": "default 0"},
            license=_GROUPLENS_LICENSE,
        ),
        DatasetSpec(
            name="ml-10m",
            kind="rating",
            description="MovieLens 10M: 69,878 users, 10,677 movies, 10,000,054 half-star ratings "
            "0.5..5; item genres; random split",
            files=("ratings.dat",),
            optional_files=("movies.dat",),
            url="https://files.grouplens.org/datasets/movielens/ml-10m.zip",
            citation=_ML_CITE,
            dirname="ml-10m",
            options={"test_fraction": "default 0.1", "seed": "default 0"},
            license=_GROUPLENS_LICENSE,
        ),
        DatasetSpec(
            name="douban",
            kind="rating",
            description="Douban 3000x3000 subset (mgcnn): ratings 1..5, user social graph, 90/10",
            files=("training_test_dataset.mat",),
            url="https://github.com/fmonti/mgcnn",
            citation=_MGCNN_CITE + " Data: Hao Ma et al. WSDM 2011.",
            dirname="douban",
            license="research use (mgcnn repository GPL-3.0)",
        ),
        DatasetSpec(
            name="flixster",
            kind="rating",
            description="Flixster 3000x3000 subset (mgcnn): ratings 0.5..5, user and item 10-NN "
            "graphs, 90/10",
            files=("training_test_dataset_10_NNs.mat",),
            url="https://github.com/fmonti/mgcnn",
            citation=_MGCNN_CITE + " Data: Mohsen Jamali, Martin Ester. RecSys 2010.",
            dirname="flixster",
            license="research use (mgcnn repository GPL-3.0)",
        ),
        DatasetSpec(
            name="yahoo_music",
            kind="rating",
            description="Yahoo! Music 3000x3000 subset (mgcnn): ratings 1..100, item 10-NN graph, "
            "90/10",
            files=("training_test_dataset_10_NNs.mat",),
            url="https://github.com/fmonti/mgcnn",
            citation=_MGCNN_CITE + " Data: Yahoo! Webscope / KDD Cup 2011.",
            dirname="yahoo_music",
            license="Yahoo! Webscope research-only agreement",
        ),
        _lightgcn(
            "gowalla",
            "Gowalla check-ins, 10-core: 29,858 users, 40,981 items, 1,027,370 interactions",
            "Eunjoon Cho, Seth A. Myers, Jure Leskovec. Friendship and Mobility. KDD 2011.",
            ("README.md",),
        ),
        _lightgcn(
            "yelp2018",
            "Yelp 2018 challenge, 10-core: 31,668 users, 38,048 items, 1,561,406 interactions",
            "Yelp Dataset Challenge 2018.",
        ),
        _lightgcn(
            "amazon-book",
            "Amazon Books, 10-core: 52,643 users, 91,599 items, 2,984,108 interactions",
            "Ruining He, Julian McAuley. Ups and Downs. WWW 2016.",
            ("README.md",),
        ),
        DatasetSpec(
            name="steam-200k",
            kind="interaction",
            description="Steam-200K (Kaggle): 12,393 users, 5,155 games; purchase (or play) rows "
            "as implicit feedback, per-user 80/20 split",
            files=("steam-200k.csv",),
            url="https://www.kaggle.com/datasets/tamber/steam-video-games",
            citation="Tamber. Steam Video Games. Kaggle, 2017.",
            dirname="steam-200k",
            options={
                "behavior": "'purchase' (default) or 'play'",
                "k_core": "keep users and items with at least k interactions (default none)",
                "test_fraction": "per-user test share (default 0.2)",
                "seed": "default 0",
            },
            license="Kaggle dataset terms",
        ),
        _planetoid("cora", "Cora", "2,708 papers, 1,433 features, 7 classes"),
        _planetoid("citeseer", "CiteSeer", "3,327 papers, 3,703 features, 6 classes"),
        _planetoid("pubmed", "PubMed", "19,717 papers, 500 features, 3 classes"),
        _saint("ppi", "PPI (GraphSAINT format): 14,755 nodes, 121 labels", True),
        _saint("flickr", "Flickr (GraphSAINT format): 89,250 nodes, 7 classes", False),
        _saint("reddit", "Reddit (GraphSAINT format): 232,965 nodes, 41 classes", False),
        DatasetSpec(
            name="cora-gnnbench",
            kind="graph",
            description="Cora full graph from gnn-benchmark (2,708 nodes, 7 classes); random "
            "20/30 per-class train/val split, rest test",
            files=("cora.npz",),
            url="https://github.com/shchur/gnn-benchmark",
            citation=_SHCHUR_CITE,
            dirname="gnn-benchmark-npz",
            options={"seed": "seed of the per-class split (default 0)"},
            license="MIT",
        ),
        DatasetSpec(
            name="citeseer-gnnbench",
            kind="graph",
            description="CiteSeer full graph from gnn-benchmark (3,312 nodes, 6 classes); random "
            "20/30 per-class train/val split, rest test",
            files=("citeseer.npz",),
            url="https://github.com/shchur/gnn-benchmark",
            citation=_SHCHUR_CITE,
            dirname="gnn-benchmark-npz",
            options={"seed": "seed of the per-class split (default 0)"},
            license="MIT",
        ),
    ]
}


def get_spec(name: str) -> DatasetSpec:
    """The spec of ``name``; :class:`ConfigError` listing the known names otherwise."""
    spec = SPECS.get(name)
    if spec is None:
        raise ConfigError(f"unknown dataset {name!r}; known datasets: {', '.join(SPECS)}")
    return spec
