"""The table of results/fedgnn-secure-sum.md: FedGNN's paper mode (pseudo items) beside
``item_privacy=secure_sum``, from the runs' ``results.json``.

    python bench/fedgnn_secure_sum_table.py

Prints what ``fedrec pages results/fedgnn-secure-sum`` writes into the page's generated block
(:func:`fedrec.reproduce.tables.fedgnn_secure_sum`): runs were made with ``--out
runs/secsum/NAME`` (the commands of ``results/fedgnn-secure-sum/runs.json``) and their
``results.json`` copied to ``results/fedgnn-secure-sum/NAME/``. The secure sums are SecAgg+'s
(Bell et al. 2020: O(log n) masks per client instead of n - 1; the same sum as Bonawitz et
al.'s, so the same model); Douban and Flixster run their packaged settings at the same
160-round schedule.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fedrec.reproduce.tables import fedgnn_secure_sum

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    sys.stdout.write(fedgnn_secure_sum(ROOT, "results/fedgnn-secure-sum"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
