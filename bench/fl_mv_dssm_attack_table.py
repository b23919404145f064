"""The malicious-view attack on FL-MV-DSSM (issue item 8) as a markdown table.

    FEDREC_DATA=../shared/datasets python bench/fl_mv_dssm_attack_table.py [--devices 10]
        [--rounds 1] [--sigmas 0 1 4]

Round(s) of ML-100K with ``--devices`` devices a round and the plain sum across devices, view
``demographics`` malicious on every device (:func:`fedrec.algorithms.methods.fl_mv_dssm.attack.
malicious_view_attack`), for each noise multiplier (the paper's experiments: 1; its example: 4).
"""

from __future__ import annotations

import argparse

import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.methods.fl_mv_dssm import multiview_of
from fedrec.algorithms.methods.fl_mv_dssm.attack import attack_table_markdown, attack_table_rows
from fedrec.data import load_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--sigmas", type=float, nargs="+", default=[0.0, 1.0, 4.0])
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    mv = multiview_of(resolve_config("fl-mv-dssm", "ml-100k"),
                      load_dataset("ml-100k", args.data_dir))
    rows = attack_table_rows(
        mv, lambda ov: resolve_config("fl-mv-dssm", "ml-100k", overrides=ov), args.sigmas,
        args.devices, args.rounds)
    print(attack_table_markdown(rows), end="")


if __name__ == "__main__":
    main()
