"""Configurations: a typed dataclass per algorithm, which holds every option's default and doc.

Resolution order (later wins), the layers of :func:`build_config`:

1. ``default``: the defaults of the algorithm's config dataclass (each field an :func:`option`:
   the value ``fedrec run`` uses, and a one-line doc);
2. ``packaged D section``: the ``datasets: {D: {...}}`` section for the chosen dataset D in the
   algorithm's packaged YAML (``fedrec/configs/NAME.yaml``): the settings tuned for D;
3. ``preset P`` and ``preset P, D section``: with ``--preset P``, the top level of the packaged
   ``presets: {P: {...}}`` entry, then its own ``datasets: {D: {...}}`` section;
4. ``file F``: the top level of the user's ``--config F``;
5. ``file F, D section``: that file's own ``datasets: {D: {...}}`` section;
6. ``--set``: ``--set key=value`` overrides (the Python API's ``config=``/``overrides``).

Defaults and presets. The defaults (layers 1 and 2) are the best settings fedrec has chosen on
validation for the method, per dataset where a packaged section exists; a dataset with no
packaged section (a user's own file, a catalogue dataset nobody tuned on) runs the config
class's defaults, which were chosen on the method's main dataset (its docs page names it and
reports a generalisation row on a dataset of the same kind that no default was tuned on). Every
algorithm has a ``paper`` preset: the settings its reproduction runs as the paper's method,
exactly (``fedrec reproduce`` passes ``--preset paper`` for those rows); where the defaults are
the paper's, the preset is empty and its comment says so. A default never weakens a privacy
mechanism relative to the ``paper`` preset: privacy parameters are not tuning knobs. A preset
sits over the packaged dataset sections because a user who names one asks for those settings
whatever the dataset; the packaged sections still apply to the options it does not set (data
handling such as a given split, cohort sizes for a large population).

Why the user's top level beats the packaged section: a value a user writes into a file is meant
to run; a packaged section is a default that happens to depend on the dataset. Were it the other
way round, ``rounds: 10`` in a file would be ignored on every dataset with a packaged ``rounds``
(FedGNN on ML-100K ran 640 rounds), and the user could not tell from the file. Why the file's
own dataset section beats its top level: a user who writes one is being more specific, exactly
as the packaged sections are over the defaults; and ``--set`` is last because it is the most
specific and the most recent (one run, typed on the command line).

``fedrec config show NAME`` (:func:`default_config_text`) writes every option with its default
and doc, and the packaged sections as comments only; ``fedrec config show NAME --dataset D``
writes every option as it resolves for D (the packaged D section folded into the top level,
each value it changes marked ``# from: packaged D section``). Either file sets every option at
the top level, so once edited it is what runs, and on any dataset: no packaged section applies
over a file that sets every option. :func:`config_sources` says where each option of a resolved
configuration that is not at its default came from (the layer names above; ``fedrec run``
records it in ``results.json`` and prints it). A file written by an older ``config show``
carries the packaged sections as its own ``datasets:`` section, which (layer 4) still beats its
top level there: delete that section, or write the file anew.

Unknown keys, a ``datasets:`` section naming a dataset fedrec does not know, a key given twice
in one mapping, values of the wrong type, out of range or not finite (NaN, infinity), and a
config file that is not a readable UTF-8 file raise :class:`~fedrec.errors.ConfigError` with a
one-line message.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
import types
import typing
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import yaml

from fedrec.errors import ConfigError

#: ``option(..., absent=...)`` not given: a record without the option implies its default.
_AT_DEFAULT = object()


def option(default: Any, doc: str = "", absent: Any = _AT_DEFAULT) -> Any:
    """A config field: its default (what ``fedrec run`` uses) and the one-line doc ``fedrec
    config show`` prints beside it. A subclass redeclaring a field only to change its default may
    leave ``doc`` empty: the doc of the base class's field then applies (:func:`option_doc`).
    ``absent``: the value a record written before the option existed was made with, where the
    default has since changed (:func:`with_new_defaults`)."""
    metadata: dict[str, Any] = {"doc": doc} if doc else {}
    if absent is not _AT_DEFAULT:
        metadata["absent"] = absent
    return dataclasses.field(default=default, metadata=metadata)


def option_doc(cls: type, name: str) -> str:
    """The doc of option ``name`` of config class ``cls``: the nearest one along its bases."""
    for klass in cls.__mro__:
        declared = getattr(klass, "__dataclass_fields__", {}).get(name)
        if declared is not None and declared.metadata.get("doc"):
            return str(declared.metadata["doc"])
    return ""


@dataclass
class RunConfig:
    """Options every run has. Every algorithm's config class gives ``rounds`` its default."""

    rounds: int = dataclasses.field(metadata={"doc": "rounds of training (for a centralized "
                                                     "algorithm: epochs)"})
    seed: int = option(0, "public seed: initialisation, client sampling, simulated dropouts")
    clients_per_round: int = option(0, "clients sampled per round (0 = every client, every "
                                       "round)")
    dropout: float = option(0.0, "probability that a client drops out of a round (sends no "
                                 "update)")
    dropout_after_calls: int = option(0, "calls a dropping client still answers in its round "
                                         "(0: none)")
    eval_every: int = option(1, "evaluate every this many rounds (and after the last)")

    def validate(self) -> None:
        check_range("rounds", self.rounds, 1)
        check_range("clients_per_round", self.clients_per_round, 0)
        check_range("dropout", self.dropout, 0.0, 0.99)
        check_range("dropout_after_calls", self.dropout_after_calls, 0)
        check_range("eval_every", self.eval_every, 1)


def check_clients(clients_per_round: int, clients: int, whose: str, which: str) -> None:
    """Raise ConfigError when ``clients_per_round`` asks for more than the ``clients`` there
    are (0 means all of them; a larger count would be capped silently). ``whose``: who has
    them (a dataset's name, an algorithm's), ``which``: what the clients are there."""
    if clients_per_round > clients:
        raise ConfigError(f"clients_per_round is {clients_per_round} but {whose} has {clients} "
                          f"clients ({which}); use at most {clients}, or 0 for all")


def check_range(name: str, value: float, low: float | None = None, high: float | None = None,
                *, low_open: bool = False) -> None:
    """Raise ConfigError unless ``value`` is finite and ``low <= value <= high`` (``low < value``
    when ``low_open``)."""
    check_finite(name, value)
    if low is not None and (value <= low if low_open else value < low):
        bound = f"> {low}" if low_open else f">= {low}"
        raise ConfigError(f"{name} must be {bound}, got {value}")
    if high is not None and value > high:
        raise ConfigError(f"{name} must be <= {high}, got {value}")


def check_finite(name: str, value: float) -> None:
    """Raise ConfigError for NaN or an infinity: no option of a run means anything at either."""
    if value != value:  # NaN
        raise ConfigError(f"{name} must be a number, got NaN")
    if math.isinf(value):
        raise ConfigError(f"{name} must be a finite number, got {value}")


def check_choice(name: str, value: str, choices: typing.Iterable[str]) -> None:
    choices = list(choices)
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


C = TypeVar("C", bound=RunConfig)


def _coerce(name: str, value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        return _coerce(name, value, args[0])
    if origin in (tuple, list):
        if not isinstance(value, list | tuple):
            value = [value]
        (inner, *_) = typing.get_args(hint) or (Any,)
        return tuple(_coerce(name, v, inner) for v in value)
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{name} must be true or false, got {value!r}")
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ConfigError(f"{name} must be an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, str):
            # PyYAML (YAML 1.1) reads exponents without a dot, like 1e-3, as strings.
            try:
                value = float(value)
            except ValueError:
                raise ConfigError(f"{name} must be a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{name} must be a number, got {value!r}")
        # Here, not only in validate(): a float option no validate() checks is finite too.
        check_finite(name, float(value))
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name} must be a string, got {value!r}")
        return value
    return value


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key written twice in one mapping (PyYAML keeps the last
    value silently; a repeated key in a config file is a mistake, not an override). Keys a merge
    (``<<: *anchor``) brings in may be overridden: that is what a merge is for."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise _DuplicateKey(key, key_node.start_mark.line + 1)
            seen.add(key)
        return super().construct_mapping(node, deep)


class _DuplicateKey(Exception):
    def __init__(self, key: Any, line: int) -> None:
        super().__init__(key, line)
        self.key, self.line = key, line


def _read_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader) or {}  # a SafeLoader subclass
    except _DuplicateKey as dup:
        raise ConfigError(f"{source} line {dup.line}: {dup.key!r} is given twice") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{source}{where}: not valid YAML") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of option: value")
    return data


def packaged_sections_text(algorithm: str) -> str:
    """The algorithm's packaged per-dataset file (``datasets:`` and its comments; empty when
    it has none)."""
    try:
        return resources.files("fedrec.configs").joinpath(f"{algorithm}.yaml").read_text()
    except FileNotFoundError:
        return ""


def _packaged(algorithm: str) -> dict[str, Any]:
    """The packaged file read, holding a ``datasets:`` and a ``presets:`` section only: the
    defaults live in the config dataclass, and a default written here too would be a second
    source of truth."""
    source = f"{algorithm}.yaml"
    data = _read_yaml(packaged_sections_text(algorithm), source)
    extra = sorted(set(data) - {"datasets", "presets"})
    if extra:
        raise ConfigError(f"{source}: only datasets: and presets: sections belong here (the "
                          f"defaults are the config class's), got {', '.join(extra)}")
    return data


def _packaged_sections(algorithm: str) -> dict[str, Any]:
    """The packaged file's ``datasets:`` section, as ``{"datasets": ...}``."""
    data = _packaged(algorithm)
    return {"datasets": data["datasets"]} if "datasets" in data else {}


def presets(algorithm: str) -> dict[str, dict[str, Any]]:
    """``{name: options}`` of the algorithm's packaged presets (each a mapping of options, with
    an optional ``datasets:`` section of its own), checked to be mappings."""
    source = f"{algorithm}.yaml"
    found = _packaged(algorithm).get("presets") or {}
    if not isinstance(found, dict):
        raise ConfigError(f"{source}: presets: expected a mapping of preset name: options")
    for name, options in found.items():
        if options is not None and not isinstance(options, dict):
            raise ConfigError(f"{source}: presets: {name}: expected a mapping of option: value")
    return {name: dict(options or {}) for name, options in found.items()}


def _preset(algorithm: str, name: str) -> dict[str, Any]:
    """The options of preset ``name``, or a ConfigError naming the ones there are."""
    known = presets(algorithm)
    if name not in known:
        raise ConfigError(f"unknown preset {name!r} for {algorithm}; known: "
                          f"{', '.join(known) or 'none'}")
    return known[name]


@dataclass(frozen=True)
class OptionRow:
    """One option of a config class as ``fedrec config show`` and the docs' options tables
    describe it: ``name``, its annotation as written (``type``), its default as one line of
    YAML (``default``; empty where the class gives none) and its one-line ``doc``."""

    name: str
    type: str
    default: str
    doc: str


def option_rows(cls: type[RunConfig]) -> list[OptionRow]:
    """Every option of config class ``cls``, in declaration order (base classes first), each
    with the doc :func:`option_doc` finds and its default rendered as :func:`default_config_text`
    writes it."""
    return [OptionRow(f.name, f.type if isinstance(f.type, str) else getattr(f.type, "__name__",
                                                                              str(f.type)),
                      "" if f.default is dataclasses.MISSING else _yaml_scalar(f.default),
                      option_doc(cls, f.name))
            for f in dataclasses.fields(cls)]


def packaged_dataset_names(algorithm: str) -> list[str]:
    """The datasets the algorithm's packaged file has a section for (``configs/ALGORITHM.yaml``,
    ``datasets:``), in file order."""
    return list(_dataset_sections(_packaged_sections(algorithm), f"{algorithm}.yaml"))


def _yaml_scalar(value: Any) -> str:
    """``value`` as one line of YAML that reads back as the same option value."""
    plain = list(value) if isinstance(value, tuple) else value
    return yaml.safe_dump(plain, default_flow_style=True, width=1 << 20).split("\n")[0]


def default_config_text(cls: type[RunConfig], algorithm: str,
                        heading: typing.Sequence[str] = (), dataset: str | None = None,
                        preset: str | None = None) -> str:
    """What ``fedrec config show`` prints (:func:`fedrec.algorithms.config_show_text` gives the
    algorithm's class and ``heading``): ``heading`` as comments, then every option of ``cls``
    with its doc and its value: the default, or with ``dataset`` (a catalogue name) the value
    ``fedrec run --dataset DATASET`` resolves, the packaged section for it folded in (each value
    that is not the default marked ``# from: packaged DATASET section, default X``). The
    packaged sections follow as comments, for their values and reasons: a file that held them
    as its own ``datasets:`` section would override its own top level on those datasets, the
    values a user edits. A valid ``--config`` file that sets every option, so that once edited
    it is what runs (on any dataset); unedited it resolves to the same configuration as no file
    for ``dataset`` (without one: for any dataset that has no packaged section). With
    ``preset``, the values are the preset's over them (marked ``# from: preset P``)."""
    if dataset is not None:
        from fedrec.data.catalog import SPECS

        if dataset not in SPECS:
            raise ConfigError(f"config show --dataset takes a catalogue name, got {dataset!r} "
                              f"(known: {', '.join(SPECS)}); a file or folder of your own has "
                              "no packaged section: its run starts from the defaults")
    cfg, origin = _resolve(cls, algorithm, dataset, preset=preset)
    rows = []
    for f, row in zip(dataclasses.fields(cls), option_rows(cls), strict=True):
        value, doc = getattr(cfg, f.name), row.doc
        if not _at_default(f, value):
            default = f", default {row.default}" if row.default else ""
            note = f"from: {origin.get(f.name, DEFAULT)}{default}"
            doc = f"{doc}  # {note}" if doc else note
        rows.append((f"{f.name}: {_yaml_scalar(value)}", doc))
    width = min(28, max(len(text) for text, _ in rows))
    where = f"{cls.__module__}.{cls.__qualname__}"
    sections = packaged_dataset_names(algorithm)
    if dataset is None:
        intro = [f"# The defaults of {where}",
                 "# (comments there and in its base classes give the reasons for tuned values)."]
        if sections:
            intro += [f"# Packaged settings for {', '.join(sections)} are at the end, commented",
                      "# out: a run with this file does not use them. For the values of a run on",
                      f"# one of them: fedrec config show {algorithm} --dataset NAME."]
    elif dataset in sections:
        intro = [f"# What `fedrec run {algorithm} --dataset {dataset}` uses: the defaults of",
                 f"# {where}, with the packaged {dataset} section",
                 "# applied (the values marked \"from:\"; its reasons are at the end)."]
    else:
        intro = [f"# What `fedrec run {algorithm} --dataset {dataset}` uses: the defaults of",
                 f"# {where} ({algorithm} has no packaged {dataset} section)."]
    if preset is not None:
        intro += [f"# With --preset {preset}: its values are folded in (marked \"from: preset\")."]
    intro += [f"# Presets: {', '.join(presets(algorithm))} (fedrec config show {algorithm} "
              "--preset NAME)."]
    lines = [
        *(f"# {line}" for line in heading),
        *intro,
        "# Copy this file, edit it, and pass it with --config; or override single keys with",
        "# --set key=value. The file sets every option, and a value in a --config file wins",
        "# over the packaged per-dataset settings: what it says is what runs, on any dataset.",
        *(f"{text:<{width}}  # {doc}" if doc else text for text, doc in rows),
    ]
    packaged = packaged_sections_text(algorithm)
    if packaged.strip():
        lines += ["",
                  f"# The packaged per-dataset settings (fedrec/configs/{algorithm}.yaml), for",
                  "# reference only: commented out, they do not apply to a run with this file.",
                  *(f"# {line}".rstrip() for line in packaged.rstrip("\n").split("\n"))]
    return "\n".join(lines) + "\n"


def _read_config_file(path: Path) -> str:
    """The text of a ``--config`` file, or a ConfigError saying why it cannot be one."""
    if path.is_dir():
        raise ConfigError(f"config file {path} is a directory, not a YAML file")
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read ({exc.strerror})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"config file {path} line {line}: not UTF-8 text (byte 0x{raw[exc.start]:02x})"
        ) from None


def _dataset_sections(data: dict[str, Any], source: str) -> dict[str, dict[str, Any]]:
    """The ``datasets:`` section of one layer, each key checked to be a dataset fedrec knows (a
    typo such as ``ml100k`` would otherwise be a section that silently never applies)."""
    from fedrec.data.catalog import SPECS

    sections = data.pop("datasets", None) or {}
    if not isinstance(sections, dict):
        raise ConfigError(f"{source}: datasets: expected a mapping of dataset name: options")
    for name, section in sections.items():
        if name not in SPECS:
            raise ConfigError(f"{source}: datasets: unknown dataset {name!r}; known: "
                              f"{', '.join(SPECS)}")
        if section is not None and not isinstance(section, dict):
            raise ConfigError(f"{source}: datasets: {name}: expected a mapping of option: value")
    return sections


#: Where an option's value came from (:func:`config_sources`): the dataclass's default, or
#: ``--set`` (also the Python API's overrides); the other layers name their file and dataset.
DEFAULT = "default"
SET = "--set"


def _layers(algorithm: str, dataset: str | None, config_file: str | Path | None,
            overrides: typing.Sequence[str] | dict[str, Any],
            preset: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The layers over the defaults, lowest first (the module docstring), each as (its source,
    the options it sets)."""
    layers = []
    packaged = _dataset_sections(_packaged_sections(algorithm), f"{algorithm}.yaml")
    if dataset is not None and dataset in packaged:
        layers.append((f"packaged {dataset} section", packaged[dataset] or {}))
    if preset is not None:
        chosen = _preset(algorithm, preset)
        own = _dataset_sections(chosen, f"{algorithm}.yaml presets: {preset}")
        layers.append((f"preset {preset}", chosen))
        if dataset is not None and dataset in own:
            layers.append((f"preset {preset}, {dataset} section", own[dataset] or {}))
    if config_file is not None:
        path = Path(config_file)
        data = _read_yaml(_read_config_file(path), str(path))
        own = _dataset_sections(data, str(path))
        layers.append((f"file {path}", data))
        if dataset is not None and dataset in own:
            layers.append((f"file {path}, {dataset} section", own[dataset] or {}))
    pairs = overrides.items() if isinstance(overrides, dict) else map(parse_override, overrides)
    layers.append((SET, dict(pairs)))
    return layers


def _at_default(f: dataclasses.Field[Any], value: Any) -> bool:
    return f.default is not dataclasses.MISSING and value == f.default


def parse_override(item: str, flag: str = "--set") -> tuple[str, Any]:
    """``key=value`` of a command-line ``flag``, the value read as YAML (``3``, ``0.1``, ``u3``)."""
    if "=" not in item:
        raise ConfigError(f"{flag} expects key=value, got {item!r}")
    key, raw = item.split("=", 1)
    return key.strip(), _read_yaml(f"v: {raw}", f"{flag} {key}")["v"]


def option_flags(flag: str, values: typing.Mapping[str, Any]) -> str:
    """`` FLAG key=value`` for each of ``values``, each as a shell word that
    :func:`parse_override` reads back as that value: a scalar as Python prints it where that
    reads back the same (``0.05``, ``False``, ``per-user``), otherwise, and for a list or null,
    as one line of YAML (``[demographics]``, ``1.0e-05``, ``null``); quoted for the shell where
    needed (``'views=[svd]'``). What the reproductions print as a run's ``fedrec run``
    command."""

    def text(key: str, value: Any) -> str:
        if isinstance(value, bool | int | float | str):
            try:
                if _read_yaml(f"v: {value}", key)["v"] == value:
                    return str(value)
            except ConfigError:
                pass
        return _yaml_scalar(value)

    return "".join(f" {flag} {shlex.quote(f'{k}={text(k, v)}')}" for k, v in values.items())


def parse_options(items: list[str] | None, flag: str) -> dict[str, Any]:
    """Every ``key=value`` of a repeated ``flag``; a key given twice is refused."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, value = parse_override(item, flag)
        if key in out:
            raise ConfigError(f"{flag} {key} is given twice")
        out[key] = value
    return out


def build_config(
    cls: type[C],
    algorithm: str,
    dataset: str | None = None,
    config_file: str | Path | None = None,
    overrides: typing.Sequence[str] | dict[str, Any] = (),
    preset: str | None = None,
) -> C:
    """Resolve the configuration of one run of ``algorithm`` with options ``cls`` (see the
    module docstring). ``cls`` must be the algorithm's own class: another's defaults would
    apply silently; :func:`fedrec.algorithms.resolve_config` looks it up."""
    return _resolve(cls, algorithm, dataset, config_file, overrides, preset)[0]


def config_sources(
    cls: type[RunConfig],
    algorithm: str,
    dataset: str | None = None,
    config_file: str | Path | None = None,
    overrides: typing.Sequence[str] | dict[str, Any] = (),
    preset: str | None = None,
) -> dict[str, str]:
    """``{option: source}`` for every option of the configuration :func:`build_config` resolves
    (same arguments) whose value is not its default, in field order: the last layer that set it
    (``packaged D section``, ``preset P``, ``file F``, ``file F, D section``, ``--set``: the
    module docstring). An option at its default is left out, even where a layer wrote the
    default."""
    cfg, origin = _resolve(cls, algorithm, dataset, config_file, overrides, preset)
    return {f.name: origin.get(f.name, DEFAULT) for f in dataclasses.fields(cfg)
            if not _at_default(f, getattr(cfg, f.name))}


def _resolve(
    cls: type[C],
    algorithm: str,
    dataset: str | None = None,
    config_file: str | Path | None = None,
    overrides: typing.Sequence[str] | dict[str, Any] = (),
    preset: str | None = None,
) -> tuple[C, dict[str, str]]:
    """The configuration, and the source of every option some layer set."""
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for source, layer in _layers(algorithm, dataset, config_file, overrides, preset):
        values.update(layer)
        origin.update(dict.fromkeys(layer, source))
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        valid = ", ".join(sorted(names))
        own = sorted(n for n in names if n.endswith("_dp"))  # a method's own DP mode
        hint = (f"; {algorithm} has no DP aggregate (dp)"
                + (f", its DP mode is {', '.join(own)}" if own else "")) if "dp" in unknown else ""
        raise ConfigError(f"unknown option(s) {', '.join(unknown)} for {algorithm}{hint}; "
                          f"valid: {valid}")
    kwargs = {k: _coerce(k, v, hints[k]) for k, v in values.items()}
    try:
        cfg = cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{algorithm}: {exc}") from None
    cfg.validate()
    return cfg, origin


def to_dict(cfg: RunConfig) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def with_new_defaults(stored: dict[str, Any], cfg: RunConfig) -> dict[str, Any]:
    """``stored`` (a :func:`to_dict` written by an older fedrec) with every option it lacks set
    to its default in ``cfg``'s class. An option is added with a default that keeps the old
    behaviour, so a run stored before it existed was made with that default: comparing the
    filled record keeps a finished run (or a checkpoint) valid when an unrelated option appears,
    and still tells it apart from a run that sets the new option otherwise. An option whose
    default changed after it was added fills in the value it had then (``option(absent=)``).
    """
    defaults = {f.name: f.metadata.get("absent", f.default) for f in dataclasses.fields(cfg)
                if f.default is not dataclasses.MISSING}
    return {**{k: v for k, v in defaults.items() if k not in stored}, **stored}
