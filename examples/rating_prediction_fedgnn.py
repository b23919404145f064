"""Rating prediction with FedGNN (Wu et al., KDD 2021) from Python: load, configure, run on the
in-process simulator, read the result and its ledger back.

    python examples/rating_prediction_fedgnn.py                       # ML-100K, 2 rounds
    python examples/rating_prediction_fedgnn.py --dataset my.csv --rounds 1 --clients-per-round 8

``--dataset`` is a catalogue name or a file of ratings (header ``user,item,rating``; see
``fedrec.data.user_files``). The client secret below makes the run reproducible; a real
experimenter keeps it from the server.
"""

from __future__ import annotations

import argparse
import tempfile

import fedrec


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="ml-100k")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients-per-round", type=int, default=None)
    parser.add_argument("--pseudo-items", type=int, default=None)
    parser.add_argument("--neighbours", type=int, default=None)
    args = parser.parse_args(argv)

    ds = fedrec.load_dataset(args.dataset)
    print(f"{ds.name}: {ds.num_users} users, {ds.num_items} items, {len(ds.train)} training "
          f"ratings, {len(ds.valid)} validation, {len(ds.test)} test")

    options = {"clients_per_round": args.clients_per_round, "pseudo_items": args.pseudo_items,
               "neighbours": args.neighbours}
    cfg = fedrec.make_config("fedgnn", args.dataset, rounds=args.rounds, eval_every=1,
                        **{k: v for k, v in options.items() if v is not None})
    with tempfile.TemporaryDirectory() as out:
        result = fedrec.run("fedgnn", args.dataset, config=cfg, out=out,
                            client_secret="5eed" * 16)
        assert fedrec.read_results(out).final == result.final  # what results.json holds

    for row in result.history:  # one row per round: its evaluation and its ledger totals
        print(f"round {row['round']}: test RMSE {row['eval']['rmse']:.4f}, "
              f"{row['communication']['bytes_total']:,} bytes")
    totals = result.communication["totals"]
    epsilon = result.privacy.get("epsilon")  # of everything a client uploads over the run
    print(f"final test RMSE {result.final['rmse']:.4f}; bytes up {totals['bytes_up']:,}, down "
          f"{totals['bytes_down']:,}; epsilon {epsilon:.4g}; {result.wall_time_s:.1f} s")
    return result.final


if __name__ == "__main__":
    main()
