"""One module per source file format; each exposes a ``load_*(root, ...)`` function.

Use :func:`fedrec.data.registry.load_dataset` rather than these directly: it resolves the data
directory, checks the files and validates options.
"""

from fedrec.data.loaders.gnn_benchmark import load_gnn_benchmark
from fedrec.data.loaders.graphsaint import load_graphsaint
from fedrec.data.loaders.lightgcn import load_lightgcn
from fedrec.data.loaders.mgcnn import load_mgcnn
from fedrec.data.loaders.ml100k import load_ml100k
from fedrec.data.loaders.movielens_dat import load_movielens_dat
from fedrec.data.loaders.planetoid import load_planetoid
from fedrec.data.loaders.steam import load_steam

__all__ = [
    "load_gnn_benchmark",
    "load_graphsaint",
    "load_lightgcn",
    "load_mgcnn",
    "load_ml100k",
    "load_movielens_dat",
    "load_planetoid",
    "load_steam",
]
