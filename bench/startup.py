"""The CLI's start: wall time of ``fedrec --help`` and ``fedrec algorithms`` (issue 41, item 5:
target under 1.5 s each), each in a fresh process, median of a few runs.

    python bench/startup.py [--repeats 7] [--out results/bench_startup.json]

Rows: ``python -m fedrec.cli.main --help``, ``python -m fedrec.cli.main algorithms``, the
installed entry point's ``fedrec --help`` and ``fedrec algorithms`` (the ``fedrec`` script next
to this interpreter, when there is one; it imports the ``fedrec`` that ``PYTHONPATH`` and the
environment select, recorded below), and two references: the bare interpreter
(``python -c pass``) and ``python -c "import torch"``, what a start used to pay before anything
else. Each process's output goes to /dev/null. One unmeasured run of every command comes first
(the file cache), then the repeats go round the commands in turn, so that a change of the
machine's load spreads over all of them. The load average (1 min) before and after is recorded:
on a busy machine every row is slower, the references included.

A benchmark, not a test: ``tests/cli/test_main.py`` checks what makes the start fast (no
torch, numpy, Flower or method package is imported by ``--help`` or the list), which does not
depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 1.5


def commands() -> dict[str, list[str]]:
    """Each measured command by its name in the table."""
    python = [sys.executable]
    cli = [*python, "-m", "fedrec.cli.main"]
    rows = {"python -m fedrec.cli.main --help": [*cli, "--help"],
            "python -m fedrec.cli.main algorithms": [*cli, "algorithms"]}
    script = Path(sys.executable).parent / "fedrec"
    if script.is_file():
        rows["fedrec --help (entry point)"] = [str(script), "--help"]
        rows["fedrec algorithms (entry point)"] = [str(script), "algorithms"]
    rows["reference: python -c pass"] = [*python, "-c", "pass"]
    rows["reference: python -c 'import torch'"] = [*python, "-c", "import torch"]
    return rows


def fedrec_module() -> str:
    """The ``fedrec/__init__.py`` the measured commands import (``PYTHONPATH`` may select
    another checkout than the installed one)."""
    return subprocess.run([sys.executable, "-c", "import fedrec; print(fedrec.__file__)"],
                          check=True, capture_output=True, text=True).stdout.strip()


def wall(argv: list[str]) -> float:
    """Seconds from starting ``argv`` to its exit (status 0 required)."""
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def measure(repeats: int) -> list[dict[str, object]]:
    cmds = commands()
    for argv in cmds.values():
        wall(argv)  # warm the file cache; not counted
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(repeats):
        for name, argv in cmds.items():
            times[name].append(wall(argv))
    rows: list[dict[str, object]] = []
    for name, runs in times.items():
        median = statistics.median(runs)
        rows.append({"name": name, "argv": cmds[name][1:], "median_s": round(median, 3),
                     "min_s": round(min(runs), 3), "max_s": round(max(runs), 3),
                     "runs_s": [round(t, 3) for t in runs],
                     "under_target": None if name.startswith("reference") else
                     median < TARGET_S})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="measured runs of each command")
    ap.add_argument("--out", default=None, help="write the table as JSON here")
    args = ap.parse_args()
    if args.repeats < 1:
        sys.exit("startup.py: error: --repeats must be at least 1")
    load_before = os.getloadavg()[0]
    rows = measure(args.repeats)
    load_after = os.getloadavg()[0]
    for row in rows:
        met = "" if row["under_target"] is None else "met" if row["under_target"] else "NOT met"
        print(f"{row['name']:40s} median {row['median_s']:.3f} s  "
              f"(min {row['min_s']:.3f}, max {row['max_s']:.3f})  {met}")
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after; "
          f"{len(os.sched_getaffinity(0))} cores; fedrec from {fedrec_module()}")
    if args.out:
        Path(args.out).write_text(json.dumps({
            "command": "python bench/startup.py " + " ".join(sys.argv[1:]),
            "python": sys.executable, "fedrec_module": fedrec_module(),
            "cores": len(os.sched_getaffinity(0)), "load_1min_before": round(load_before, 2),
            "load_1min_after": round(load_after, 2), "repeats": args.repeats,
            "target_s": TARGET_S, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
