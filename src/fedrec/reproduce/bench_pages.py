"""The results pages a bench script measures and ``fedrec pages`` writes again, running nothing.

Each page of :data:`BENCH_PAGES` is rendered whole from the JSON its script commits beside it:
the script measures, writes the JSON and calls :func:`write_bench_page`; ``fedrec pages``
calls the same renderer on the committed JSON (so a figure typed into the page, or a page left
behind when its renderer changed, is stale). Every renderer reads only the checkout ``root``
it is given and shows each value as the script printed it (the format of each column is the
renderer's; nothing is computed but the layout).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedrec.core.files import write_atomic
from fedrec.errors import ConfigError

#: Where the benches' commands read the data (the checkout's sibling, as in their docstrings).
DATA = "FEDREC_DATA=../shared/datasets"


@dataclass(frozen=True)
class BenchPage:
    """One page: its path and its JSON sources relative to the checkout, the bench script that
    measures them, and the function that renders the page from the checkout ``root``."""

    page: str
    sources: tuple[str, ...]
    script: str
    render: Callable[[Path], str]

    def header(self, name: str) -> str:
        """The page's first line: what writes it, from what."""
        return (f"<!-- Written by `fedrec pages {name}` from {', '.join(self.sources)} "
                f"(measured by `{self.script}`); edit fedrec.reproduce.bench_pages, not this "
                f"page. -->")

    def text(self, name: str, root: Path) -> str:
        """The whole page: :meth:`header`, then what :attr:`render` writes."""
        return f"{self.header(name)}\n{self.render(root)}"


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    """:func:`fedrec.reproduce.report.markdown_table`, imported when a page is written (the
    report module pulls in the runner: ``fedrec pages --help`` lists these pages without it)."""
    from fedrec.reproduce.report import markdown_table

    return markdown_table(headers, rows)


def read_json(root: Path, path: str) -> Any:
    """The committed JSON ``root/path`` (a one-line ConfigError naming it if missing or
    malformed)."""
    try:
        return json.loads((root / path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: missing; its bench script writes it") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not readable JSON ({exc})") from None


def dp_audit(root: Path) -> str:
    """``results/dp-audit/README.md``: accounted epsilon beside the audited lower bounds, a row
    per configuration of ``audit.json``."""
    rows = read_json(root, "results/dp-audit/audit.json")
    lines = ["# One-run audit of the DP aggregate", "",
             "Made by `OMP_NUM_THREADS=1 python bench/bench_dp_audit.py` (its docstring: the "
             "canaries and guesses). Server-side accounted epsilon (delta 1e-5) beside the "
             "audited lower bound (95% confidence) with the mechanism on and with its noise "
             "removed. 'sized for' is the fraction of the canaries the distributed noise "
             "assumes survive (0.6: the noise of a sum that may lose 40%; all survive here, so "
             "the sum carries more noise than accounted at the threshold, and the accounting "
             "uses the survivors).", ""]
    table = _table(
        ["mechanism", "z", "rounds", "sized for", "accounted", "audited", "audited, no noise"],
        [[r["mechanism"], f"{r['noise_multiplier']:g}", r["rounds"],
          f"{r['noise_sized_for']:g}", f"{r['accounted_epsilon']:.3f}",
          f"{r['audited_lower_bound']:.3f}", f"{r['audited_without_noise']:.3f}"]
         for r in rows])
    return "\n".join([*lines, table]) + (
        "\nWith the noise removed every guess is right, and the last column is the most this "
        "audit (1000 canaries, 500 guesses at most) can certify: a mutation is caught where the "
        "accounted epsilon lies below it.\n")


def privacy_attacks(root: Path) -> str:
    """``results/privacy-attacks/README.md``: each case's attack F1 beside chance and the
    popularity guess, a row per scored round of every ``<case>.json``."""
    lines = ["# Differencing attacks on a run's aggregates (ML-100K)", "",
             "Made by `python bench/bench_aggregate_attacks.py` (module docstring: the cases "
             "and the command). Mean per-client F1 of the guessed rated items beside the F1 of "
             "a random guess of the same size (chance); clients scored: those in at least one "
             "sum. Popularity: every client guessed the k most-rated items (k its own count, "
             "granted as to the attack): what aggregate statistics alone give, which DP allows.",
             ""]
    rows = []
    for path in sorted((root / "results/privacy-attacks").glob("*.json")):
        case = read_json(root, path.relative_to(root).as_posix())
        eps = case["epsilon_server"]
        rows += [[case["case"], case["attack"], "none" if eps is None else f"{eps:.3g}",
                  row["round"], f"{row['attack_f1']:.3f}", f"{row['chance_f1']:.3f}",
                  f"{row['popularity_f1']:.3f}"] for row in case["rows"]]
    return "\n".join(lines) + "\n" + _table(
        ["case", "attack", "server-side epsilon (whole run)", "round", "attack F1", "chance F1",
         "popularity F1"], rows)


def fedgnn_leakage(root: Path) -> str:
    """``results/fedgnn-leakage.md``: the single-upload attack per (M, LDP, scored round), each
    guess rule's F1 (``random`` last: the chance level)."""
    data = read_json(root, "results/fedgnn-leakage.json")
    args, results = data["args"], data["results"]
    rules = list(dict.fromkeys(k[len("attack_"):-len("_f1")] for r in results for k in r
                               if k.startswith("attack_") and k.endswith("_f1")
                               and k != "attack_f1"))
    rules = [r for r in rules if r != "random"] + ["random"] * ("random" in rules)
    flags = " ".join(f"--{k.replace('_', '-')}" + ("" if v == "True" else f" {v}")
                     for k, v in args.items() if v not in ("None", "False"))
    k_is = "estimated" if args.get("estimated_k") == "True" else "granted"
    head = [f"FedGNN on {args['dataset']}, k {k_is}; F1 columns: each rule's mean F1",
            f"(`{DATA} python bench/bench_fedgnn_leakage.py {flags}`)", ""]
    rows = []
    for r in results:
        if "attack_f1" not in r:
            why = "diverged" if r.get("diverged") else "no upload scored"
            rows.append([r["M"], r["ldp"], r["round"], "-", "-", 0, f"({why})"]
                        + [""] * (3 + len(rules)))
            continue
        rows.append([r["M"], r["ldp"], r["round"], f"{r['rmse']:.3f}", f"{r['attack_rows']:.0f}",
                     f"{r['attack_uploads']:.0f}", r["best_rule"],
                     f"{r['attack_precision']:.3f}", f"{r['attack_recall']:.3f}",
                     f"{r['attack_f1']:.3f}", *(f"{r[f'attack_{x}_f1']:.3f}" for x in rules)])
    return "\n".join(head) + "\n" + _table(
        ["M", "LDP", "round", "RMSE", "rows/client", "uploads", "best rule", "precision",
         "recall", "F1", *(f"F1 {x}" for x in rules)], rows)


def fedgnn_leakage_rounds(root: Path) -> str:
    """``results/fedgnn-leakage-rounds.md``: per (pseudo_set, LDP), each cross-round attack's
    mean F1 after a client's n-th upload; then the RMSE of each pseudo_set on all of ML-100K, the
    ``fedrec results`` table of its committed runs."""
    from fedrec.reproduce.blocks import results_table

    data = read_json(root, "results/fedgnn-leakage-rounds.json")
    args = data["args"]
    lines = [f"# FedGNN cross-round leakage ({data['dataset_name']}, {data['num_users']} users, "
             f"{args['clients_per_round']} per round, {args['rounds']} rounds)", "",
             f"Command: `{DATA} {data['command']}`", "",
             "Mean F1 over clients of each attack after the client's n-th upload (module "
             "`fedrec.attacks.cross_round`); `chance`: K / upload length; `_kest`: k estimated "
             "as upload length - M instead of granted.", ""]
    for res in data["results"]:
        # k estimated = k granted whenever no client is short of unrated items: one such column.
        cols = [c for c in res["attacks"]
                if not c.endswith("_kest") or c == "consistency_ratio_kest"]
        rows = [[row["uploads"] if row["uploads"] != "all" else f"all (mean {row['mean_n']:.1f})",
                 f"{row['clients']:.0f}", f"{row['chance']:.3f}",
                 *(f"{row[c]:.3f}" for c in cols)] for row in res["table"]]
        lines += [f"### pseudo_set={res['mode']}, LDP {res['ldp']}: RMSE {res['rmse']:.4f} after "
                  f"{res['rounds']} rounds ({res['seconds']:.0f} s)", "",
                  _table(["uploads", "clients", "chance", *cols], rows)]
    runs = "results/fedgnn-ml-100k-pseudo-*/results.json"
    lines += ["## RMSE of each pseudo_set on all of ML-100K (160 rounds, LDP on: clip 0.1, "
              "Laplace 0.2, M 1000)", "",
              f"Printed by `fedrec results {runs} --markdown --metrics rmse,mae` (each run made "
              "by its command, with `--threads 1`, party-secret draws and the validation split; "
              "test RMSE at the validation-chosen round, here the only evaluated one; wall times "
              "on a shared, loaded 2-core machine).", "",
              results_table([runs, "--markdown", "--metrics", "rmse,mae"], root,
                            "results/fedgnn-leakage-rounds.md")]
    return "\n".join(lines)


#: The seed-replay table's columns and their formats.
SEED_REPLAY_COLUMNS = [
    ("label", "{}"), ("fedgnn_uploads", "{}"), ("fedgnn_f1", "{:.3f}"),
    ("fedgnn_f1_chance", "{:.3f}"), ("fedgnn_noise_exact", "{:.3f}"),
    ("fedgnn_expansion_key_derived", "{}"), ("ptf_uploads", "{}"), ("ptf_f1", "{:.3f}"),
    ("ptf_f1_chance", "{:.3f}"), ("fedmf_key_rebuilt", "{}")]


def seed_replay(root: Path) -> str:
    """``results/seed-replay.md``: a row per label of ``seed-replay.json`` (each the commit it
    ran on), under the commands the labels record."""
    entries = read_json(root, "results/seed-replay.json")
    commands = dict.fromkeys(row["command"] for row in entries.values())
    rows = [[fmt.format({**row, "label": label}[col]) for col, fmt in SEED_REPLAY_COLUMNS]
            for label, row in entries.items()]
    return "\n".join([
        "Seed replay by a curious server (config + received messages only), ML-100K",
        f"({'; '.join(f'`{c}`' for c in commands)}; per label, the commit it ran on)", "",
        _table([col for col, _ in SEED_REPLAY_COLUMNS], rows)])


#: Every bench-measured page by its ``fedrec pages`` name.
BENCH_PAGES: dict[str, BenchPage] = {
    "results/dp-audit": BenchPage(
        "results/dp-audit/README.md", ("results/dp-audit/audit.json",),
        "bench/bench_dp_audit.py", dp_audit),
    "results/privacy-attacks": BenchPage(
        "results/privacy-attacks/README.md", ("results/privacy-attacks/*.json",),
        "bench/bench_aggregate_attacks.py", privacy_attacks),
    "results/fedgnn-leakage": BenchPage(
        "results/fedgnn-leakage.md", ("results/fedgnn-leakage.json",),
        "bench/bench_fedgnn_leakage.py", fedgnn_leakage),
    "results/fedgnn-leakage-rounds": BenchPage(
        "results/fedgnn-leakage-rounds.md",
        ("results/fedgnn-leakage-rounds.json", "results/fedgnn-ml-100k-pseudo-*/results.json"),
        "bench/bench_fedgnn_leakage_rounds.py", fedgnn_leakage_rounds),
    "results/seed-replay": BenchPage("results/seed-replay.md", ("results/seed-replay.json",),
                                     "bench/bench_seed_replay.py", seed_replay),
}


def write_bench_page(name: str, root: Path) -> Path:
    """Write the page ``name`` of :data:`BENCH_PAGES` under the checkout ``root`` from its
    committed JSON (what a bench script calls after writing it); return the page's path."""
    page = BENCH_PAGES[name]
    path = root / page.page
    write_atomic(path, page.text(name, root), f"the page {name}")
    return path
