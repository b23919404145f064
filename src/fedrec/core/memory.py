"""The memory a run may allocate, and the check that refuses a run that cannot fit in it.

A method that knows what its configuration costs estimates it before anything is built, from
the configuration and the dataset's sizes (:attr:`fedrec.algorithms.AlgorithmSpec.
memory_estimate`), as bytes by part; :func:`check_fits` compares the sum with the budget and
refuses, with one line naming the estimate, its largest part and the budget, what exceeds it.
Without it a run grew until the kernel's OOM killer ended it, with no word (issue 42: Feras with
5000 hosts on Cora reached 22 GB).

The budget (:func:`memory_budget`) is ``$FEDREC_MEMORY_BUDGET_MIB`` (MiB) where it is set, else
the memory available now: the kernel's ``MemAvailable`` (``/proc/meminfo``), lowered to what the
process's cgroup (v2) still allows where it sets a limit; psutil's figure where there is no
``/proc``; no check where neither is known. It is measured after the dataset is loaded, so an
estimate counts what comes on top of the loaded data.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from fedrec.errors import ConfigError

BUDGET_ENV = "FEDREC_MEMORY_BUDGET_MIB"
MIB = 1 << 20
#: What a run holds beyond its data and what its method's estimate counts: torch's and the
#: allocator's buffers, the round's small transients (measured: 110-150 MiB over the loaded
#: data in Feras and fedavg-gcn runs on Cora with 4 hosts).
WORKING_SET = 128 * MIB
WORKING_SET_PART = "the run's working set (libraries, buffers)"


def size_text(n: float) -> str:
    """``n`` bytes in a short human form (``7.4 MiB``, ``21.3 GiB``)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def _meminfo_available(path: Path = Path("/proc/meminfo")) -> int | None:
    try:
        for line in path.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room() -> int | None:
    """What this process's cgroup (v2) still allows, where it sets a limit."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        rel = next(line.split("::", 1)[1] for line in lines if line.startswith("0::"))
        group = Path("/sys/fs/cgroup") / rel.lstrip("/")
        limit = (group / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(int(limit) - int((group / "memory.current").read_text()), 0)
    except (OSError, ValueError, StopIteration):
        return None


def memory_budget() -> tuple[int, str] | None:
    """``(bytes, where the figure comes from)``, or None when no budget is known (module
    docstring). A ``$FEDREC_MEMORY_BUDGET_MIB`` that is not a positive number is a one-line
    ConfigError."""
    raw = os.environ.get(BUDGET_ENV, "").strip()
    if raw:
        try:
            mib = float(raw)
        except ValueError:
            mib = math.nan
        if not (math.isfinite(mib) and mib > 0):
            raise ConfigError(f"{BUDGET_ENV} must be a positive number of MiB, got {raw!r}")
        return int(mib * MIB), f"${BUDGET_ENV}"
    available = _meminfo_available()
    if available is None:
        try:
            import psutil
        except ImportError:
            return None
        return int(psutil.virtual_memory().available), "available memory"
    room = _cgroup_room()
    if room is not None and room < available:
        return room, "what the cgroup's memory.max leaves"
    return available, "available memory, /proc/meminfo"


def check_fits(what: str, parts: dict[str, int], advice: str = "") -> None:
    """Raise a one-line ConfigError when the estimate ``parts`` (bytes by part) exceeds the
    :func:`memory_budget`; ``what`` names the run, ``advice`` says what would need less."""
    total = sum(parts.values())
    budget = memory_budget()
    if budget is None or total <= budget[0]:
        return
    limit, source = budget
    largest = max(parts, key=lambda k: parts[k])
    raise ConfigError(
        f"{what} would need about {size_text(total)} of memory (estimate; the largest part, "
        f"{largest}: {size_text(parts[largest])}), more than the budget of "
        f"{size_text(limit)} ({source}){'; ' + advice if advice else ''}; "
        f"{BUDGET_ENV} sets another budget")
