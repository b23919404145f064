"""The malicious-view attack on FL-MV-DSSM (issue item 8) as a markdown table.

    FEDREC_DATA=../shared/datasets python bench/fl_mv_dssm_attack_table.py [--devices 10]
        [--rounds 1] [--sigmas 0 1 4]

Round(s) of ML-100K with ``--devices`` devices a round and the plain sum across devices, view
``demographics`` malicious on every device (:func:`fedrec.algorithms.fl_mv_dssm.attack.
malicious_view_attack`), for each noise multiplier (the paper's experiments: 1; its example: 4).
"""

from __future__ import annotations

import argparse

import torch

from fedrec.algorithms import resolve_config
from fedrec.algorithms.fl_mv_dssm import multiview_of
from fedrec.algorithms.fl_mv_dssm.attack import malicious_view_attack
from fedrec.data import load_dataset
from fedrec.federation.secrets import ClientSecrets


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
    print("| sigma | C | attacked (round, device) | cosine mean | cosine min | label AUC | "
          f"epsilon ({args.rounds} round(s)) | epsilon (T = 100) |")
    print("|---|---|---|---|---|---|---|---|")
    for sigma in args.sigmas:
        cfg = resolve_config("fl-mv-dssm", "ml-100k", overrides={
            "noise_multiplier": sigma, "secure_aggregation": False,
            "clients_per_round": args.devices})
        r = malicious_view_attack(cfg, mv, "demographics", args.rounds, ClientSecrets(bytes(32)))
        print(f"| {sigma:g} | {r['clip']:g} | {r['attacked']:.0f} | {r['cosine_mean']:.4f} | "
              f"{r['cosine_min']:.4f} | {r['label_auc_mean']:.3f} | {r['epsilon_rounds']:.2f} | "
              f"{r['epsilon_T100']:.2f} |")


if __name__ == "__main__":
    main()
