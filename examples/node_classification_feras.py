"""Node classification with Feras ("Federated Graph-based Networks with Shared Embedding") from
Python: hosts that each see the whole topology but only their visible nodes' attributes train a
GCN together, sharing first-layer embeddings and weights through an aggregation server; the
result holds the accuracy, the ledger of every message and the privacy statement.

    python examples/node_classification_feras.py                      # Cora, 2 short rounds
    python examples/node_classification_feras.py --dataset my_graph/ --rounds 1

``--dataset`` is a catalogue name or a folder of a graph (``edges.csv``, ``features.npy``,
``labels.csv``, optional masks; see ``fedrec.data.user_graph``).
"""

from __future__ import annotations

import argparse

import fedrec


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="cora")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=5, help="iterations per round")
    parser.add_argument("--roots", type=int, default=None, help="random-walk roots per subgraph")
    parser.add_argument("--presample", type=int, default=20)
    args = parser.parse_args(argv)

    ds = fedrec.load_dataset(args.dataset)
    print(f"{ds.name}: {ds.num_nodes} nodes, {ds.edge_index.shape[1] // 2} edges, "
          f"{ds.num_features} features, {ds.num_classes} classes; {ds.meta['split']}")

    options = {"num_roots": args.roots}
    cfg = fedrec.make_config("feras", args.dataset, rounds=args.rounds, num_hosts=2,
                             iterations_per_round=args.iterations, weight_every=args.iterations,
                             presample=args.presample,
                             **{k: v for k, v in options.items() if v is not None})
    result = fedrec.run("feras", args.dataset, config=cfg, client_secret="5eed" * 16)

    for row in result.history:  # one row per round: its evaluation and its ledger totals
        print(f"round {row['round']}: val accuracy {row['eval']['val_accuracy']:.4f}, test "
              f"accuracy {row['eval']['accuracy']:.4f}, {row['communication']['bytes_total']:,} "
              "bytes")
    for role, entry in result.communication["by_role"].items():  # who sent what
        print(f"  {role}: sent {entry['sent']:,} bytes, received {entry['received']:,}")
    print(f"final test accuracy {result.final['accuracy']:.4f}; privacy: "
          f"{result.privacy.get('guarantee')}")
    return result.final


if __name__ == "__main__":
    main()
