"""The conformance suite prints what methods declare they do not meet, and the tolerances they
claim, at the end of every run that collected it."""

from __future__ import annotations

from typing import Any

from fedrec.algorithms import ALGORITHMS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not any("conformance" in str(getattr(item, "fspath", "")) for item in
               getattr(terminalreporter.config, "_conformance_items", [])):
        return
    lines = []
    for name, spec in ALGORITHMS.items():
        if not spec.federated:
            continue
        c = spec.contract
        lines += [f"{name}: exempt from {check}: {why}" for check, why in c.exempt.items()]
        if c.flower_tolerance:
            lines.append(f"{name}: Flower within {c.flower_tolerance:g} relative: "
                         f"{c.flower_tolerance_reason}")
        if c.boundary_tolerance:
            lines.append(f"{name}: other parties' messages within {c.boundary_tolerance:g} "
                         f"relative: {c.boundary_tolerance_reason}")
    if lines:
        terminalreporter.section("conformance: declared exemptions and tolerances")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    config._conformance_items = [i for i in items if "conformance" in str(i.fspath)]
