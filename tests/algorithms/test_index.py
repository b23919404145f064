"""fedrec.algorithms.index: the methods' index, read from the packages' ``meta.py`` alone.

That it equals the registry's specs is ``tests/conformance/test_registry.py``'s check."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fedrec.algorithms import methods
from fedrec.algorithms.index import MethodInfo, method_index

_META = """from fedrec.algorithms.index import MethodInfo

METHOD = MethodInfo(name={name!r}, summary="s", paper="p", dataset_kinds=("rating",),
                    federated={federated})
"""


def _package(root: Path, name: str, meta: str | None, init: str = "") -> None:
    folder = root / name
    folder.mkdir()
    (folder / "__init__.py").write_text(init)
    if meta is not None:
        (folder / "meta.py").write_text(meta)


@pytest.fixture
def fake_methods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty methods folder in place of the real one; the index is read afresh from it."""
    monkeypatch.setattr(methods, "__path__", [str(tmp_path)])
    return tmp_path


def _index() -> dict[str, MethodInfo]:
    return method_index.__wrapped__()  # not the cached index of the real folder


def test_the_index_reads_meta_without_running_the_package(fake_methods: Path) -> None:
    """A package whose ``__init__.py`` would fail to import is still listed: only its
    ``meta.py`` runs. Federated methods come first, then the baselines, each by name."""
    broken = "raise RuntimeError('the package was imported')\n"
    _package(fake_methods, "zeta", _META.format(name="zeta", federated=True), broken)
    _package(fake_methods, "alpha", _META.format(name="alpha", federated=False), broken)
    _package(fake_methods, "beta", _META.format(name="beta", federated=True), broken)
    index = _index()
    assert list(index) == ["beta", "zeta", "alpha"]
    assert index["alpha"] == MethodInfo("alpha", "s", "p", ("rating",), False)
    assert index["alpha"].line() == "alpha        s  [rating]"
    assert not [m for m in sys.modules if m.startswith(f"{methods.__name__}.alpha")]


def test_a_package_without_its_meta_or_with_a_taken_name_is_refused(fake_methods: Path) -> None:
    _package(fake_methods, "one", None)
    with pytest.raises(TypeError, match=r"methods\.one is a method package: it must have "
                                        r"meta\.py"):
        _index()
    (fake_methods / "one" / "meta.py").write_text("METHOD = 'not a MethodInfo'\n")
    with pytest.raises(TypeError, match=r"one\.meta must define METHOD \(a MethodInfo\)"):
        _index()
    (fake_methods / "one" / "meta.py").write_text(_META.format(name="same", federated=True))
    _package(fake_methods, "two", _META.format(name="same", federated=False))
    with pytest.raises(TypeError, match="two methods are named 'same'"):
        _index()


def test_the_real_index_lists_every_method_package() -> None:
    index = method_index()
    assert index is method_index()  # read once
    assert {"fedgnn", "fcf", "pmf", "lightgcn", "ngcf", "neumf"} <= set(index)
    assert index["fedgnn"].federated and not index["pmf"].federated
