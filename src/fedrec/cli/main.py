"""The ``fedrec`` command line.

    fedrec run ALGORITHM --dataset NAME|FILE|DIR [--config FILE] [--set key=value ...]
               [--data-opt key=value ...] [--out DIR] [--resume | --overwrite]
               [--checkpoint-every N]
               [--log-dir DIR] [--device cpu|cuda] [--quiet]
    fedrec reproduce NAME [--quick] [--out DIR] [--seeds N] [--gowalla]
    fedrec deploy ALGORITHM --dataset NAME [--nodes N] [--max-users N] [--set ...] [--out DIR]
                  [--overwrite] [--compare]
    fedrec results DIR... [--plot FILE.png] [--markdown] [--metrics M1,M2]
    fedrec pages [PAGE ...] [--check] [--root DIR]
    fedrec algorithms
    fedrec config show ALGORITHM [--dataset NAME]
    fedrec datasets list | info NAME|FILE|DIR [--data-opt ...] | verify [NAME ...]

``--data-dir DIR`` may stand before or after the subcommand's name.

``fedrec run`` and ``fedrec deploy`` without ``--out`` write into a new
``runs/ALGORITHM-DATASET-YYYYmmdd-HHMMSS/`` under the current directory (:mod:`fedrec.cli.outdir`),
which the summary names; an ``--out`` that holds a finished run is refused unless
``--overwrite`` (or, for ``run``, ``--resume``) is given. The summary names the data read (files,
sha256, split), the preset and the round whose metrics it shows: the one chosen on validation,
with its rule, and the last round's beside it (``results.json["reported_round"]``).

The run options' flags (``--resume``, ``--device``, ``--nodes``, ``--timeout``, ...) take their
defaults and help from :class:`fedrec.options.RunOptions` (:mod:`fedrec.cli.options`).

Every error caused by input (unknown names, bad values, malformed data files, missing data)
prints one line, ``fedrec: error: ...``, and exits with status 2; nothing half-written is left
looking complete. Whatever can be checked without the data (options, config file, output
directory, a checkpoint to resume) is checked before the data is loaded. A write that fails
(a full disk) is one line too, naming the file; a checkpoint's previous version survives it.
``fedrec results`` leaves out a results.json it cannot read or show, with one warning line
naming it, and shows the rest.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from fedrec.cli.options import (
    add_client_secret_option,
    add_preset_option,
    add_run_option,
    run_options_of,
)
from fedrec.cli.outdir import out_dir_for
from fedrec.cli.summary import summary_rows, table
from fedrec.core.threads import check_threads, set_threads
from fedrec.errors import ConfigError, FedrecError
from fedrec.reproduce import REPRODUCTIONS


def cmd_run(args: argparse.Namespace) -> int:
    from fedrec.api import run
    from fedrec.config import parse_options, parse_override

    check_threads(args.threads, "--threads")
    options = run_options_of(args, "simulator")
    # Without --out: a new runs/<algorithm>-<dataset>-<time>/ (not with --resume, which
    # continues the run in the --out it names).
    with out_dir_for(args.out, args.algorithm, args.dataset, default=not args.resume) as out:
        try:
            result = run(
                args.algorithm,
                args.dataset,
                dataset_options=parse_options(args.data_opt, "--data-opt"),
                data_dir=args.data_dir,
                config_file=args.config,
                preset=args.preset,
                config=dict(parse_override(item) for item in args.set or []),
                out=out,
                options=options,
                threads=args.threads,  # fedrec.run sets them (fedrec.core.threads), as for all
            )
        except KeyboardInterrupt:
            if out is not None and args.out is None:
                print(f"fedrec: the run's folder is {out} (--out {out} --resume continues it)",
                      file=sys.stderr)
            raise
    rows = summary_rows(result)
    if out is not None:
        rows.append(("results", os.path.join(out, "results.json")))
    if args.log_dir:
        rows.append(("tensorboard log", args.log_dir))
    print(table(rows))
    return 0


GOWALLA_REPRODUCTIONS = ("fedgrec", "ptf-fedrec")  # the reproductions with a --gowalla part


def cmd_reproduce(args: argparse.Namespace) -> int:
    from fedrec.reproduce import get_reproduction
    from fedrec.reproduce.pages import MadeWith, make_report
    from fedrec.reproduce.runner import check_only

    set_threads(args.threads, "--threads")
    reproduce = get_reproduction(args.name)
    extra = {}
    if args.gowalla:
        if args.name not in GOWALLA_REPRODUCTIONS:
            raise ConfigError(f"--gowalla applies to {' and '.join(GOWALLA_REPRODUCTIONS)} only")
        extra["gowalla"] = True
    for flag, count in (("--seeds", args.seeds), ("--sweep-seeds", args.sweep_seeds)):
        if count < 1:
            raise ConfigError(f"{flag} must be at least 1, got {count}")
    out = Path(args.out or os.path.join("results", args.name + ("-quick" if args.quick else "")))
    kwargs = dict(quick=args.quick, seeds=args.seeds, sweep_seeds=args.sweep_seeds,
                  data_dir=args.data_dir, options=run_options_of(args, "simulator"), **extra)
    run_missing: bool | tuple[str, ...] = not args.report_only
    if args.only is not None:
        if args.report_only:
            raise ConfigError("--only and --report-only exclude each other")
        run_missing = tuple(p for p in args.only.split(",") if p)
        if not run_missing:
            raise ConfigError("--only needs at least one setting key prefix")
        check_only(reproduce, run_missing, **kwargs)  # before hours of the other prefixes
    made = MadeWith(args.name, args.seeds, args.sweep_seeds, args.gowalla, args.quick)
    report = make_report(made, out, run_missing=run_missing, data_dir=args.data_dir,
                         options=kwargs["options"])
    print(f"report: {report}")
    return 0


def cmd_pages(args: argparse.Namespace) -> int:
    from fedrec.reproduce.pages import stale_pages, write_pages

    set_threads(args.threads, "--threads")
    root = Path(args.root)
    if args.check:
        stale = stale_pages(root, args.names, data_dir=args.data_dir)
        for path in stale:
            print(f"stale: {path}")
        if stale:
            print(f"fedrec: error: {len(stale)} generated file(s) differ from what `fedrec "
                  f"pages` writes from the committed results: run it and commit them",
                  file=sys.stderr)
            return 1
        print("pages: every generated page is up to date")
        return 0
    for name, changed in write_pages(root, args.names, data_dir=args.data_dir).items():
        print(f"{name}: {', '.join(changed) if changed else 'unchanged'}")
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from fedrec.reproduce.compare import find_runs, render
    from fedrec.reproduce.compare_plot import plot_curves

    if args.plot and not args.plot.lower().endswith(".png"):
        raise ConfigError(f"--plot writes a PNG: give a file name ending in .png, not {args.plot}")
    skipped: list[str] = []
    runs = find_runs(args.dirs, skipped)
    for problem in skipped:  # the rest are shown; each left out is named
        print(f"fedrec: warning: left out {problem}", file=sys.stderr)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    sys.stdout.write(render(runs, markdown=args.markdown, metrics=metrics))
    if args.plot:
        drawn = plot_curves(runs, Path(args.plot))
        print(f"plot: {args.plot} ({', '.join(drawn)} by round)")
    return 0


def cmd_algorithms(args: argparse.Namespace) -> int:
    from fedrec.algorithms.index import method_index

    for info in method_index().values():  # the packages' meta.py: no method, no torch imported
        print(info.line())
    return 0


def cmd_config_show(args: argparse.Namespace) -> int:
    from fedrec.algorithms import config_show_text, get_algorithm

    get_algorithm(args.algorithm)
    sys.stdout.write(config_show_text(args.algorithm, args.dataset, args.preset))
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    from fedrec.config import parse_options
    from fedrec.data import dataset_info, dataset_options, list_datasets, verify

    if args.action == "list":
        for spec in list_datasets():
            print(f"{spec.name:18s} {spec.kind:12s} {spec.description}")
    elif args.action == "info":
        if not args.names:
            raise FedrecError("datasets info needs a dataset name")
        options = parse_options(args.data_opt, "--data-opt")
        for name in args.names:
            accepted = dataset_options(name)
            info = dataset_info(name, args.data_dir, **options)
            print(name)
            print(table([(str(k), str(v)) for k, v in info.items()]))
            print("options (--data-opt KEY=VALUE)")
            print(table(list(accepted.items())))
    elif args.action == "verify":
        names = args.names or [s.name for s in list_datasets()]
        bad = 0
        for name in names:
            report = verify(name, args.data_dir)
            for fname, status in report.items():
                print(f"{name:12s} {fname:40s} {status}")
                bad += status not in ("ok",)
        return 1 if bad and args.strict else 0
    return 0


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    # A process's setting (torch.set_num_threads), not a run's: not a RunOptions field; the
    # rule is fedrec.core.threads's, which fedrec.run applies too.
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: half the cores)")


_DATA_DIR_HELP = "dataset directory (default: $FEDREC_DATA, else cache)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fedrec", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", help=_DATA_DIR_HELP)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="train an algorithm on a dataset")
    run.add_argument("algorithm")
    run.add_argument("--dataset", required=True,
                     help="a catalogue name (fedrec datasets list), a file of ratings or "
                     "interactions (CSV, TSV, Parquet; --data-opt names its columns and split) "
                     "or a folder of a graph (edges.csv, features.npy, labels.csv, ...)")
    run.add_argument("--config", help="YAML file overriding the algorithm's defaults")
    add_preset_option(run)
    run.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one option")
    run.add_argument("--data-opt", action="append", metavar="KEY=VALUE",
                     help="one dataset option, e.g. split=u3 for ML-100K's third GroupLens "
                     "fold, val_fraction=0.2 (fedrec datasets info NAME lists them)")
    run.add_argument("--out", help="directory for results.json and checkpoints (default: a "
                     "new runs/ALGORITHM-DATASET-YYYYmmdd-HHMMSS/ here)")
    add_run_option(run, "resume")
    add_run_option(run, "overwrite")
    add_run_option(run, "checkpoint_every", metavar="N")
    add_run_option(run, "log_dir", metavar="DIR")
    add_run_option(run, "device")
    add_threads_option(run)
    add_run_option(run, "progress")
    add_client_secret_option(run)
    run.set_defaults(func=cmd_run)

    rep = sub.add_parser("reproduce", help="run a paper's tables and figures")
    rep.add_argument("name", help=" | ".join(REPRODUCTIONS))
    rep.add_argument("--quick", action="store_true", help="a few rounds per run (CI)")
    rep.add_argument("--out", help="output folder (default: results/NAME[-quick])")
    rep.add_argument("--seeds", type=int, default=3, help="seeds of the main table")
    rep.add_argument("--sweep-seeds", type=int, default=1, help="seeds of the sweeps")
    add_run_option(rep, "device")
    add_threads_option(rep)
    add_run_option(rep, "progress")
    rep.add_argument("--gowalla", action="store_true",
                     help="ptf-fedrec: also PTF-FedRec on Gowalla (about 50 min per seed); "
                          "fedgrec: also the accuracy table on Gowalla")
    rep.add_argument("--report-only", action="store_true",
                     help="write the report from the runs completed so far; run nothing")
    rep.add_argument("--only", metavar="PREFIXES",
                     help="run only the missing settings whose key (the report's Runs table) "
                          "starts with one of these comma-separated prefixes; report all")
    rep.set_defaults(func=cmd_reproduce)

    pages = sub.add_parser("pages", help="write every generated results page again from the "
                           "committed results, running nothing")
    from fedrec.reproduce.bench_pages import BENCH_PAGES

    pages.add_argument("names", nargs="*", metavar="PAGE",
                       help="the pages to write: a reproduction (" + ", ".join(REPRODUCTIONS)
                       + "), a bench's page (" + ", ".join(BENCH_PAGES) + "), or a page with "
                       "generated blocks (docs/NAME.md as NAME, results/NAME.md or "
                       "results/NAME/README.md as results/NAME); default: all")
    pages.add_argument("--check", action="store_true",
                       help="write into a temporary copy and exit 1 naming each committed file "
                            "that differs (CI); PNGs are not compared")
    pages.add_argument("--root", default=".", help="the fedrec checkout (default: here)")
    add_threads_option(pages)
    pages.set_defaults(func=cmd_pages)

    from fedrec.cli.deploy import add_deploy_parser

    add_deploy_parser(sub)  # fedrec deploy: the same job on Flower (fedrec.engines)

    res = sub.add_parser("results", help="compare completed runs: a table, and their curves")
    res.add_argument("dirs", nargs="+", metavar="DIR",
                     help="folders searched for results.json (or results.json files)")
    res.add_argument("--plot", metavar="FILE.png",
                     help="also draw each run's test metrics over the rounds into a PNG, a panel "
                          "per metric and dataset")
    res.add_argument("--markdown", action="store_true",
                     help="print a markdown table, with the command of each run (README's)")
    res.add_argument("--metrics", metavar="M1,M2",
                     help="the metric columns, in this order (default: every test metric)")
    res.set_defaults(func=cmd_results)

    alg = sub.add_parser("algorithms", help="list the algorithms")
    alg.set_defaults(func=cmd_algorithms)

    cfg = sub.add_parser("config", help="show an algorithm's default configuration")
    cfg.add_argument("action", choices=["show"])
    cfg.add_argument("algorithm")
    cfg.add_argument("--dataset", metavar="NAME",
                     help="write the values a run on this catalogue dataset uses: its packaged "
                     "settings folded in, each marked with where it came from")
    add_preset_option(cfg)
    cfg.set_defaults(func=cmd_config_show)

    ds = sub.add_parser("datasets", help="list, describe or verify datasets")
    ds.add_argument("action", choices=["list", "info", "verify"])
    ds.add_argument("names", nargs="*")
    ds.add_argument("--strict", action="store_true", help="verify: exit 1 unless all files ok")
    ds.add_argument("--data-opt", action="append", metavar="KEY=VALUE",
                    help="info: one dataset option (as fedrec run takes them)")
    ds.set_defaults(func=cmd_datasets)
    # After the subcommand too: SUPPRESS keeps a value given before it when none comes after.
    for subparser in sub.choices.values():
        subparser.add_argument("--data-dir", default=argparse.SUPPRESS, help=_DATA_DIR_HELP)
    return parser


def check_out_option(args: argparse.Namespace) -> None:
    """``--out`` (run, reproduce, deploy) names a folder: an empty one would write into the
    current directory, and a file there cannot hold the results."""
    out = getattr(args, "out", None)
    if out is None:
        return
    if not out.strip():
        raise ConfigError("--out is empty: give the folder to write into (. for the current "
                          "one)")
    if os.path.exists(out) and not os.path.isdir(out):
        raise ConfigError(f"output directory {out} (--out) is a file, not a directory")
    existing = Path(out).absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"output directory {out} (--out) cannot be made: {existing} is a file")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_out_option(args)
        return args.func(args)
    except FedrecError as exc:
        print(f"fedrec: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fedrec: interrupted (resume with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
