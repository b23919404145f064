"""fedrec: privacy-preserving federated recommendation and federated graph learning.

The Python API (:mod:`fedrec.api`) is here at the top level: ``fedrec.load_dataset``,
``fedrec.make_config``, ``fedrec.run`` (and its ``fedrec.RunOptions``), ``fedrec.read_results``,
``fedrec.compare``, ``fedrec.plot_curves``. They are imported on first use, so ``import fedrec``
stays cheap. ``fedrec.run`` sets torch's threads for the call as ``fedrec run`` does
(:func:`fedrec.core.threads.set_threads`: ``threads=``, by default half the cores, at least
one; one on Flower, as ``fedrec deploy``) and restores the count it found when it returns.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["RunOptions", "RunResult", "compare", "load_dataset", "make_config", "plot_curves",
           "read_results", "result_from_json", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from fedrec import api

        return getattr(api, name)
    raise AttributeError(f"module 'fedrec' has no attribute {name!r}")
