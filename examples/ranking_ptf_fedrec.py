"""Top-K ranking with PTF-FedRec (Yuan et al., ICDE 2024) from Python: clients exchange only
(item, score) predictions with a server model that is never sent; the result holds Recall@20,
NDCG@20, the measured top-guess attack, and the ledger of every message.

    python examples/ranking_ptf_fedrec.py                          # ML-100K as implicit, 1 round
    python examples/ranking_ptf_fedrec.py --dataset clicks.csv --rounds 1

``--dataset`` is a catalogue name or a file of interactions (header ``user,item``: every row a
positive; see ``fedrec.data.user_files``).
"""

from __future__ import annotations

import argparse

import fedrec


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="ml-100k")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--local-epochs", type=int, default=None)
    args = parser.parse_args(argv)

    options = {"local_epochs": args.local_epochs}
    cfg = fedrec.make_config("ptf-fedrec", args.dataset, rounds=args.rounds,
                        **{k: v for k, v in options.items() if v is not None})
    result = fedrec.run("ptf-fedrec", args.dataset, config=cfg, client_secret="5eed" * 16)

    metrics = {k: v for k, v in result.final.items() if k in ("Recall@20", "NDCG@20")}
    print(", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
    for step, entry in result.communication["by_step"].items():  # the ledger, step by step
        print(f"  {step}: {entry['bytes']:,} bytes")
    attack = result.privacy.get("measured_attack_f1")  # the top-guess attack on the uploads
    print(f"privacy: {result.privacy.get('guarantee')}; top-guess attack F1 {attack}")
    return result.final


if __name__ == "__main__":
    main()
