"""The methods' index: what ``fedrec algorithms`` lists, read without importing any method.

Every method package in :mod:`fedrec.algorithms.methods` holds a ``meta.py`` that imports
nothing but this module and defines ``METHOD`` (a :class:`MethodInfo`) or ``METHODS``
(several): each method's name, one-line summary, paper, dataset kinds and whether it is
federated. :func:`method_index` executes those files alone, by path, so that listing the
methods costs milliseconds and imports no torch; the package's ``__init__.py`` builds its
:class:`~fedrec.algorithms.base.AlgorithmSpec` from the same object
(:meth:`~fedrec.algorithms.base.AlgorithmSpec.of`), so the index and the registry
(:data:`fedrec.algorithms.ALGORITHMS`, every package imported) cannot disagree, and
``tests/conformance/test_registry.py`` checks that they do not.
"""

from __future__ import annotations

import functools
import importlib.util
import pkgutil
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from fedrec.algorithms import methods

#: The file of a method package that holds its :class:`MethodInfo`.
META_FILE = "meta.py"


@dataclass(frozen=True)
class MethodInfo:
    """A method's public description: what the registry lists and the CLI prints. ``federated``:
    the method is a federated job (its spec gives ``build_job``), not a centralized baseline."""

    name: str
    summary: str
    paper: str
    dataset_kinds: tuple[str, ...]
    federated: bool

    def line(self) -> str:
        """Its line in ``fedrec algorithms``: name, summary and dataset kinds."""
        return f"{self.name:12s} {self.summary}  [{'/'.join(self.dataset_kinds)}]"


def method_packages() -> list[str]:
    """The method packages' module names (``fedrec.algorithms.methods.<package>``), sorted."""
    return sorted(f"{methods.__name__}.{m.name}" for m in pkgutil.iter_modules(methods.__path__)
                  if m.ispkg)


def listing_order(name: str, federated: bool) -> tuple[bool, str]:
    """The registry's order: the federated methods first, then the centralized baselines,
    each by name."""
    return (not federated, name)


@functools.cache
def method_index() -> dict[str, MethodInfo]:
    """Every method's :class:`MethodInfo` by name, in :func:`listing_order`, from the packages'
    ``meta.py`` files alone (no package is imported). Computed once: every call returns the
    same dict. TypeError when a package has no ``meta.py``, its file defines neither
    ``METHOD`` nor ``METHODS``, or two methods share a name (a programming error of a new
    package, not user input)."""
    found: dict[str, MethodInfo] = {}
    for package in method_packages():
        for info in _infos_of(package):
            if info.name in found:
                raise TypeError(f"two methods are named {info.name!r}")
            found[info.name] = info
    return dict(sorted(found.items(), key=lambda kv: listing_order(kv[0], kv[1].federated)))


def _infos_of(package: str) -> tuple[MethodInfo, ...]:
    module = _load_meta(package)
    infos = getattr(module, "METHODS", None) or (getattr(module, "METHOD", None),)
    if not all(isinstance(info, MethodInfo) for info in infos):
        raise TypeError(f"{module.__name__} must define METHOD (a MethodInfo) or METHODS")
    return tuple(infos)


def _load_meta(package: str) -> ModuleType:
    """``<package>.meta``, executed from its file without running the package's
    ``__init__.py`` (which imports the method and torch). It is not registered in
    ``sys.modules``: the package, once imported, imports its ``meta.py`` as usual (a second,
    equal :class:`MethodInfo`); if it was imported first, that module is the one read."""
    name = f"{package}.meta"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(methods.__path__[0], package.rsplit(".", 1)[1], META_FILE)
    if not path.is_file():
        raise TypeError(f"{package} is a method package: it must have {META_FILE} defining "
                        "METHOD (a MethodInfo) or METHODS")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py file that exists
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
