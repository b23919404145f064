"""``fedrec run``'s flow: resolve, check, load the data, resume, run the rounds, write results.

:func:`run_experiment` is what ``fedrec run`` and ``fedrec.run(engine="simulator")`` call; the
round loop inside it is every engine's (:mod:`fedrec.rounds`), and how it runs (device,
checkpoints, progress, ...) is a :class:`~fedrec.options.RunOptions`.

The results file (``results.json``) is written once, at the end, with ``"status": "complete"``,
and records what the run ran (:func:`describe_run`: the data's files and their sha256, the split,
the preset) and the round it reports (:func:`fedrec.rounds.reported_round`). A finished result
already in the output directory is refused (:func:`check_finished`) unless the run is asked to
overwrite or resume it; it is removed only when the new run writes its first checkpoint (a run
refused, or failed before, leaves it as it was); a run that stops early
leaves only its last checkpoint (``checkpoint.pt``, written atomically
after every round, or every ``checkpoint_every`` rounds), from which ``resume=True`` continues
and ends with the same result as an uninterrupted run (all randomness is keyed by (key, round,
party), see :mod:`fedrec.core.rng`; the clients' keys come from the experimenter's client
secret, kept in the checkpoint, see :mod:`fedrec.federation.secrets`).

The checkpoint records what the run was made from (:func:`made_from`: algorithm, resolved
configuration, dataset name and options, the fingerprint of the loaded data); a resume that
differs in any of them, or that is given another client secret than the checkpoint's, is
refused (:func:`check_resume`) before anything in the output directory is touched. The data
is compared by its fingerprint, not by its spelling: a user's file by another path, or the
default split given explicitly, is the same data (:func:`same_data_spelled_otherwise`). Everything
that can be checked without the data (the options, the configuration, the output directory,
the checkpoint's record and client secret) is checked before the data is loaded; what needs
the data (its kind, its number of clients, what the run would allocate against the memory
budget: :func:`check_loaded`) right after, before anything is built, here and in
:func:`fedrec.engines.common.simulate` alike.
"""

from __future__ import annotations

import hmac
import json
import os
from pathlib import Path
from typing import Any

from fedrec.algorithms import AlgorithmSpec, get_algorithm, resolve_config
from fedrec.config import (
    RunConfig,
    check_clients,
    config_sources,
    to_dict,
    with_new_defaults,
)
from fedrec.core import files
from fedrec.core.memory import WORKING_SET, WORKING_SET_PART, check_fits
from fedrec.data import is_user_file, load_dataset
from fedrec.data.catalog import get_spec
from fedrec.data.fingerprint import fingerprint
from fedrec.data.provenance import data_record
from fedrec.data.types import (
    Dataset,
    GraphDataset,
    InteractionDataset,
    RatingDataset,
    dataset_sizes,
)
from fedrec.errors import ConfigError, DataError, ResumeRefused, WriteError
from fedrec.federation.checkpoint import CHECKPOINT_NAME, load_checkpoint, remove_stale_temps
from fedrec.federation.runtime import seed_everything
from fedrec.federation.secrets import ClientSecrets
from fedrec.federation.secure_sum import SecureSumOptions
from fedrec.options import RunOptions
from fedrec.rounds import RoundCheckpoint, RunResult, reset_peak_rss, run_rounds
from fedrec.tracking import TensorBoardLog, summary_writer_class

RESULTS_NAME = "results.json"


def dataset_kind(ds: object) -> str:
    if isinstance(ds, RatingDataset):
        return "rating"
    if isinstance(ds, InteractionDataset):
        return "interaction"
    if isinstance(ds, GraphDataset):
        return "graph"
    raise TypeError(type(ds).__name__)


def check_out_dir(out: Path, create: bool = True) -> None:
    """Raise ConfigError unless the run can write its files into ``out``: a directory (created
    when ``create``), writable, where none of the files it writes is a directory."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output directory {out} is a file, not a directory")
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"output directory {out} cannot be made: {existing} is a file")
    if create:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"output directory {out} cannot be made ({exc.strerror})") from None
    if out.is_dir() and not os.access(out, os.W_OK | os.X_OK):
        raise ConfigError(f"output directory {out} is not writable")
    for name in (RESULTS_NAME, RESULTS_NAME + ".tmp", CHECKPOINT_NAME):
        if (out / name).is_dir():
            raise ConfigError(f"{out / name} is a directory; the run writes a file there")


def check_finished(out: Path, opts: RunOptions, resumable: bool = True) -> None:
    """ConfigError (one line) when ``out`` holds a finished run -- a ``results.json`` whose
    ``status`` is ``complete`` -- and ``opts`` asks neither to ``overwrite`` nor to ``resume``.
    Reads only; checked before anything in ``out`` is touched, so a refused run leaves the
    finished one as it was. A results file that is not a finished run's (unreadable, another
    status) is not protected: a run may write over it. ``resumable``: the flag to name besides
    ``--overwrite`` (``fedrec deploy`` has no ``--resume``)."""
    path = out / RESULTS_NAME
    if opts.overwrite or opts.resume or not path.is_file():
        return
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if isinstance(stored, dict) and stored.get("status") == "complete":
        how = ("--overwrite to replace it or --resume to continue it" if resumable
               else "--overwrite to replace it")
        raise ConfigError(f"output directory {out} holds a finished run ({RESULTS_NAME}); give "
                          f"another --out, or {how}")


def describe_run(ds: Dataset, dataset: str, data_options: dict[str, Any],
                 preset: str | None = None) -> dict[str, Any]:
    """What a result records of what the run ran (:class:`~fedrec.rounds.RunResult`'s fields
    of these names): ``data``, the data's record (:func:`fedrec.data.provenance.data_record`:
    the name as given, the files read with their sha256, the loader, the split and its
    parameters, the counts) and ``preset``, the name of the preset the configuration was
    resolved from (None: none). The one place either enters a result: ``fedrec run``, the
    simulator twin of a deployment and ``fedrec deploy`` call it."""
    return {"data": data_record(ds, dataset, data_options), "preset": preset}


def made_from(
    algorithm: str, cfg: RunConfig, dataset: str, dataset_options: dict[str, Any],
    data: Dataset | None = None,
) -> dict[str, Any]:
    """What a run is made from, as its checkpoint records it and :func:`check_resume` compares.

    ``data_sha256`` (:func:`fedrec.data.fingerprint.fingerprint` of the loaded data) is there
    only when ``data`` is given: the record without it is compared before the data is loaded.
    """
    record: dict[str, Any] = {
        "algorithm": algorithm,
        "dataset": dataset,
        "dataset_options": dict(dataset_options),
        "config": to_dict(cfg),
    }
    if data is not None:
        record["data_sha256"] = fingerprint(data)
    return record


#: The entries of a :func:`made_from` record that say how the data was *spelled* (a path, the
#: options given); what the data *is* is ``data_sha256``, and only that is compared.
SPELLING = ("dataset", "dataset_options")


def same_data_spelled_otherwise(then: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """``record`` without the entries of :data:`SPELLING` that can name the same data another
    way: a user's file or folder by another path (a symlink, a copy, ``./x.csv``), options that
    spell a default (``split=u1``) or drop it. Two catalogue names stay compared (they are
    different data, refused before loading); the loaded data's ``data_sha256`` decides the
    rest (:func:`check_data`)."""
    kept = {k: v for k, v in record.items() if k not in SPELLING}
    named = [then.get("dataset"), record.get("dataset")]
    if all(isinstance(n, str) and not is_user_file(n) for n in named):
        kept["dataset"] = record["dataset"]
    return kept


def check_data(then: dict[str, Any], record: dict[str, Any]) -> None:
    """Raise :class:`ResumeRefused` when the loaded data's digest (``data_sha256`` of
    ``record``) is not the checkpoint's (``then``), naming the spelling that differs too."""
    old, now = then.get("data_sha256", _ABSENT), record["data_sha256"]
    if old == now:
        return
    shown = f"{str(old)[:12]}..." if old is not _ABSENT else "not recorded"
    spelled = [f"dataset is {then.get('dataset')} in the checkpoint, {record['dataset']} now"
               ] if then.get("dataset") != record["dataset"] else []
    opts_then, opts_now = then.get("dataset_options") or {}, record["dataset_options"]
    spelled += [f"dataset option {k} is {_shown(opts_then.get(k, _ABSENT))} in the checkpoint, "
                f"{_shown(opts_now.get(k, _ABSENT))} now"
                for k in [*opts_now, *(k for k in opts_then if k not in opts_now)]
                if opts_then.get(k, _ABSENT) != opts_now.get(k, _ABSENT)]
    raise ResumeRefused(f"--resume refused: the data's sha256 is {shown} in the checkpoint, "
                        f"{now[:12]}... now" + (f" ({'; '.join(spelled)})" if spelled else ""))


def check_resume(stored: dict[str, Any], record: dict[str, Any], out: Path | None,
                 cfg: RunConfig | None = None, secrets: ClientSecrets | None = None) -> None:
    """Raise :class:`ResumeRefused` naming the first entry of ``record`` (a :func:`made_from`)
    that the checkpoint ``stored`` records differently; entries ``record`` lacks are not
    compared. With ``cfg`` (the run's config), options that the checkpoint's config lacks count
    as their defaults (:func:`fedrec.config.with_new_defaults`: an option added since). With
    ``secrets`` (the client secret the resumed run is given), also when it is not the root
    the checkpoint's run drew from (:func:`check_secret`)."""
    then = stored.get("made_from")
    if not isinstance(then, dict):
        raise ResumeRefused(f"--resume refused: the checkpoint in {out} does not record what its "
                            "run was made from (an older fedrec wrote it); run without --resume")
    check_secret(stored, secrets)
    if "data_sha256" in record:
        check_data(then, record)
    for key, now in same_data_spelled_otherwise(then, record).items():
        old = then.get(key, _ABSENT)
        if key == "config" and cfg is not None and isinstance(old, dict):
            old = with_new_defaults(old, cfg)
        if key in _NAMED_BY_ENTRY and isinstance(old, dict):
            # Options are named as --set names them: "rounds is 20 in the checkpoint, 10 now".
            diffs = [(_NAMED_BY_ENTRY[key] + k, old.get(k, _ABSENT), now.get(k, _ABSENT))
                     for k in [*now, *(k for k in old if k not in now)]
                     if old.get(k, _ABSENT) != now.get(k, _ABSENT)]
        elif old == now or key == "data_sha256":  # the digest: compared by check_data
            diffs = []
        else:
            diffs = [(key, old, now)]
        if diffs:
            name, a, b = diffs[0]
            more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
            raise ResumeRefused(f"--resume refused: {name} is {_shown(a)} in the checkpoint, "
                                f"{_shown(b)} now{more}")


def check_secret(stored: dict[str, Any], secrets: ClientSecrets | None) -> None:
    """Raise :class:`ResumeRefused` when a client secret is given (``secrets.given``) and the
    checkpoint ``stored`` records another root for its parties (its trainer state's runtime
    part; a centralized run's checkpoint has none, and needs none). A resumed run given no
    secret continues with the checkpoint's. Compared in constant time, and never named."""
    if secrets is None or not secrets.given:
        return
    trainer = stored.get("trainer")
    runtime = trainer.get("runtime") if isinstance(trainer, dict) else None
    if not isinstance(runtime, dict) or "client_secret" not in runtime:
        return
    if not hmac.compare_digest(bytes(runtime["client_secret"]), secrets.root_bytes()):
        raise ResumeRefused("--resume refused: the client secret differs from the checkpoint's "
                            "(give the run's own, or none to continue with the checkpoint's)")


_ABSENT = object()
#: Record entries compared entry by entry, and the prefix naming one of their entries.
_NAMED_BY_ENTRY = {"config": "", "dataset_options": "dataset option "}


def _shown(value: Any) -> str:
    return "not set" if value is _ABSENT else str(value)


def check_test_rows(dataset: str, ds: Dataset) -> None:
    """Raise DataError when a rating or interaction dataset has no test rows (a user's file
    with ``test_fraction=0``, or whose every user has one row): the run would end "complete"
    with nothing scored."""
    if isinstance(ds, RatingDataset | InteractionDataset) and len(ds.test) == 0:
        why = ds.meta.get("no_test_rows", "its split holds none out")
        raise DataError(f"{dataset}: no test rows: {why}; a run is scored on its test rows")


def check_clients_per_round(cfg: RunConfig, ds: Dataset) -> None:
    """Raise ConfigError when ``clients_per_round`` asks for more clients than ``ds`` has (one
    client per user with training data; 0 means all of them), or fewer than each of the run's
    sums needs (:meth:`~fedrec.federation.secure_sum.SecureSumOptions.clients_per_sum`);
    DataError when ``ds`` itself has fewer clients than that."""
    if isinstance(ds, GraphDataset):
        return
    clients = len(ds.user_ids())
    check_clients(cfg.clients_per_round, clients, ds.name, "users with training data")
    if not isinstance(cfg, SecureSumOptions):
        return
    need, what = cfg.clients_per_sum()
    if clients < need:
        raise DataError(f"{ds.name} has {clients} client{'s' if clients != 1 else ''} (users "
                        f"with training data), but {what} needs at least {need}: give data of "
                        f"{need} or more users")
    if 0 < cfg.clients_per_round < need:
        raise ConfigError(f"clients_per_round is {cfg.clients_per_round} but {what} needs at "
                          f"least {need} clients; use {need} or more, or 0 for all")


def check_kind(algorithm: str, kinds: tuple[str, ...], dataset: str, kind: str) -> None:
    """ConfigError unless ``algorithm`` (working on ``kinds``) can run on ``kind`` data."""
    if kind not in kinds:
        raise ConfigError(f"{algorithm} works on {'/'.join(kinds)} data; {dataset} is {kind}")


def check_before_loading(spec: AlgorithmSpec, dataset: str) -> None:
    """What can be checked of a run's data before it is loaded: a catalogue dataset's kind (a
    user's file says its kind once it is read)."""
    if not is_user_file(dataset):
        check_kind(spec.name, spec.dataset_kinds, dataset, get_spec(dataset).kind)


def check_memory(spec: AlgorithmSpec, cfg: RunConfig, dataset: str, ds: Dataset) -> None:
    """ConfigError when ``spec``'s estimate of what the run allocates (its
    :attr:`~fedrec.algorithms.AlgorithmSpec.memory_estimate`, from the configuration and the
    data's sizes) exceeds the memory budget (:mod:`fedrec.core.memory`); checked before the
    run builds anything."""
    if spec.memory_estimate is None:
        return
    parts = spec.memory_estimate(cfg, dataset_sizes(ds))
    check_fits(f"{spec.name} on {dataset}", {**parts, WORKING_SET_PART: WORKING_SET})


def check_loaded(spec: AlgorithmSpec, cfg: RunConfig, dataset: str, ds: Dataset) -> None:
    """What is checked of a run's loaded data, by every engine that loads it: its kind, that
    ``clients_per_round`` asks for no more clients than it has, and that what the run would
    allocate fits in the memory budget (:func:`check_memory`)."""
    check_kind(spec.name, spec.dataset_kinds, dataset, dataset_kind(ds))
    check_test_rows(dataset, ds)
    check_clients_per_round(cfg, ds)
    check_memory(spec, cfg, dataset, ds)


def run_experiment(
    algorithm: str,
    dataset: str | os.PathLike[str],
    *,
    data_dir: str | Path | None = None,
    config_file: str | Path | None = None,
    overrides: list[str] | dict[str, Any] = (),  # type: ignore[assignment]
    out_dir: str | Path | None = None,
    dataset_options: dict[str, Any] | None = None,
    options: RunOptions | None = None,
    preset: str | None = None,
) -> RunResult:
    """Train ``algorithm`` on ``dataset``; see the module docstring for files and resuming.

    ``preset``: a packaged preset of the algorithm (``paper``: :mod:`fedrec.config`) resolved
    under ``config_file`` and ``overrides``.

    ``dataset``: a catalogue name or a user's file (:func:`~fedrec.data.load_dataset`); the run
    of a file also writes :data:`ID_MAP_NAME` (its raw ids) beside ``results.json``.

    ``dataset_options`` go to :func:`~fedrec.data.load_dataset` (e.g. ``{"split": "random"}``).

    ``options`` (:class:`~fedrec.options.RunOptions`; engine ``simulator``, default: the
    defaults): ``device``; ``progress`` (a bar on stderr); ``client_secret``, the
    experimenter's root of every client's private randomness (:mod:`fedrec.federation.secrets`;
    None draws fresh OS entropy, and the run is then not reproducible; a resumed run continues
    with the checkpoint's root); ``resume`` (needs ``out_dir``); ``overwrite`` (run into an
    ``out_dir`` holding a finished run, else refused: :func:`check_finished`);
    ``checkpoint_every`` (write
    the checkpoint after every this many rounds and each evaluated round instead of every
    round: :class:`~fedrec.rounds.RoundCheckpoint`); ``log_dir`` (also a TensorBoard log of
    every round: :class:`fedrec.tracking.TensorBoardLog`, needs the ``tensorboard`` extra);
    ``stop_after`` (end after that many rounds *as if interrupted*, no results file: it exists
    to test resuming). ``max_users`` is not taken (it slices the data of a Flower job and of
    its twin, :func:`fedrec.engines.common.simulate`).
    """
    opts = (options or RunOptions()).with_engine("simulator")
    # Refused, not ignored: a sliced run's results would be recorded as the whole dataset's.
    opts.refuse(["max_users"], "fedrec run (use --data-opt to choose the data)")
    reset_peak_rss()  # this run's peak memory, not an earlier run's in the same process
    spec = get_algorithm(algorithm)
    cfg: RunConfig = resolve_config(algorithm, dataset, config_file, overrides, preset)
    dev = opts.torch_device()
    user_file = is_user_file(dataset)
    dataset = os.fspath(dataset)
    check_before_loading(spec, dataset)
    data_options = dict(dataset_options or {})
    if opts.log_dir is not None:
        summary_writer_class()  # a missing extra is said before the data is loaded
    if out_dir is not None and not os.fspath(out_dir).strip():
        raise ConfigError("out_dir is empty: give the folder to write into ('.' for the "
                          "current one)")
    out = Path(out_dir) if out_dir is not None else None
    if opts.resume and out is None:
        raise ConfigError("--resume needs --out DIR (where the checkpoint is)")
    stored = None
    if out is not None:
        check_finished(out, opts)
        check_out_dir(out, create=not opts.resume)
        if opts.resume:
            stored = load_checkpoint(out / CHECKPOINT_NAME)
            check_resume(stored, made_from(algorithm, cfg, dataset, data_options), out, cfg,
                         opts.client_secret)
    ds = load_dataset(Path(dataset) if user_file else dataset, data_dir, download=True,
                      **data_options)
    check_loaded(spec, cfg, dataset, ds)
    # Only a run with a checkpoint needs the record (the fingerprint is a pass over the data).
    record = made_from(algorithm, cfg, dataset, data_options, ds) if out is not None else {}
    if stored is not None:
        check_resume(stored, record, out, cfg)
    if out is not None:  # the checks passed: this run owns the directory now
        remove_stale_temps(out / CHECKPOINT_NAME)  # a kill mid-write leaves them
    # Opened before the seeding, so that nothing it does can touch a seeded generator.
    log = (TensorBoardLog(opts.log_dir, stored["history"] if stored is not None else ())
           if opts.log_dir is not None else None)
    try:
        seed_everything(cfg.seed)
        trainer = spec.trainer(cfg, ds, dev, opts.client_secret)
        result = RunResult(algorithm, dataset, to_dict(cfg), dataset_options=dict(data_options),
                           **describe_run(ds, dataset, data_options, preset))
        result.config_sources = config_sources(spec.config_cls, algorithm, dataset,
                                               config_file, overrides, preset)
        checkpoint = None
        if out is not None:
            # A finished result is removed only when this run writes its first checkpoint in
            # its place (so nothing stale looks complete beside it): a run refused or failed
            # before that leaves the directory as it was.
            checkpoint = RoundCheckpoint(out / CHECKPOINT_NAME, record, resume_from=stored,
                                         every=opts.checkpoint_every,
                                         replaces=(out / RESULTS_NAME,))
        run_rounds(trainer, cfg, result, checkpoint=checkpoint,
                   progress=f"{algorithm}/{dataset}" if opts.progress else None,
                   on_round=log.on_round if log is not None else None,
                   stop_after=opts.stop_after)
        if log is not None and result.status == "complete":
            log.finish(result.privacy)
    finally:
        if log is not None:
            log.close()
    if out is not None and result.status == "complete":
        write_atomic(out / RESULTS_NAME, json.dumps(result.to_json(), indent=2, default=float),
                     "the run's results")
        if user_file:
            write_id_map(out, ds)
    return result


ID_MAP_NAME = "id_map.json"


def write_id_map(out: Path, ds: Dataset) -> None:
    """``ID_MAP_NAME`` in ``out``: the raw ids of a user's file by dense id
    (``{"user_ids": [...], "item_ids": [...]}``, entry ``u`` the raw id of dense id ``u``; a
    user's graph: ``node_ids`` and ``class_names`` where its files name them), so that what a
    run reports per user, item, node or class can be named in the file's own ids."""
    keys = ("user_ids", "item_ids", "node_ids", "class_names")
    ids = {key: ds.meta[key].tolist() for key in keys if key in ds.meta}
    write_atomic(out / ID_MAP_NAME, json.dumps(ids), "the raw ids")


def write_atomic(path: Path, text: str, what: str) -> None:
    """:func:`fedrec.core.files.write_atomic` of a run's file: a failed write is a one-line
    :class:`~fedrec.errors.WriteError` naming ``what`` and ``path``, and says that the
    checkpoint beside it, if there is one, still holds the run."""
    try:
        files.write_atomic(path, text, what)
    except WriteError as exc:
        if not (path.parent / CHECKPOINT_NAME).is_file():
            raise
        raise WriteError(f"{exc}; the checkpoint {path.parent / CHECKPOINT_NAME} holds the "
                         "finished run: free space and run again with --resume to write it"
                         ) from None
