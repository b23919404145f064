"""Registration cannot be forgotten: every package in ``fedrec.algorithms.methods`` is a
registered method, documented (``docs/<package>.md``), and every federated one is in the
conformance suite with a contract on a dataset of its kind; the methods' index (read from the
packages' ``meta.py`` without importing them) is exactly what the specs say; the CLI's lists
come from the registries."""

from __future__ import annotations

import importlib
from pathlib import Path

from fedrec.algorithms import ALGORITHMS, AlgorithmSpec, method_index, method_packages
from fedrec.data.catalog import get_spec
from fedrec.reproduce import REPRODUCTIONS

from .harness import FEDERATED

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _specs_of(module_name: str) -> list[AlgorithmSpec]:
    module = importlib.import_module(module_name)
    return list(getattr(module, "SPECS", None) or (module.SPEC,))


def test_every_method_package_is_registered_and_documented() -> None:
    packages = method_packages()
    assert len(packages) >= 15
    registered = []
    for module_name in packages:
        specs = _specs_of(module_name)
        assert specs, module_name
        for spec in specs:
            assert ALGORITHMS[spec.name] is spec
            registered.append(spec.name)
        page = DOCS / f"{module_name.rsplit('.', 1)[1].replace('_', '-')}.md"
        assert page.is_file(), f"{module_name} has no docs page {page.name}"
    assert sorted(registered) == sorted(ALGORITHMS)


def test_the_index_is_what_the_specs_say() -> None:
    """The index ``fedrec algorithms`` prints cannot drift from the specs that runs use: the
    same methods, in the same order, each with the same name, summary, paper, dataset kinds
    and kind (federated or not)."""
    assert list(method_index().values()) == [spec.info for spec in ALGORITHMS.values()]


def test_every_federated_method_is_in_the_conformance_suite() -> None:
    assert FEDERATED == sorted(n for n, s in ALGORITHMS.items() if s.federated)
    assert len(FEDERATED) >= 10
    for name in FEDERATED:
        spec = ALGORITHMS[name]
        assert get_spec(spec.contract.dataset).kind in spec.dataset_kinds, name


def test_the_cli_lists_come_from_the_registries(capsys) -> None:
    from fedrec.cli.main import build_parser, main

    assert main(["algorithms"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(ALGORITHMS)
    parser = build_parser()
    reproduce = next(a for a in parser._subparsers._group_actions[0].choices["reproduce"]._actions
                     if a.dest == "name")
    assert reproduce.help == " | ".join(REPRODUCTIONS)
