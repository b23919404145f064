"""The methods' index entry of ``fl-mv-dssm`` (:mod:`fedrec.algorithms.index`): read
without importing this package, so it imports nothing but the index."""

from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(
    name="fl-mv-dssm",
    summary="federated multi-view DSSM: isolated views per device, Gaussian noise between "
            "views, secure aggregation across devices (SEMI and FL-DSSM by options)",
    paper="Huang et al., A Federated Multi-View Deep Learning Framework for Privacy-Preserving "
          "Recommendations, arXiv:2008.10808 (2020)",
    dataset_kinds=("rating",),
    federated=True,
)
