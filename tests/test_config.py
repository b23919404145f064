"""Configuration resolution: dataclass defaults, packaged per-dataset sections, --config file,
--set overrides; ``fedrec config show`` as a config file."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml

from fedrec import config
from fedrec.algorithms import (
    ALGORITHMS,
    config_show_text,
    resolve_config,
    resolve_config_sources,
)
from fedrec.algorithms.methods.central_ranking import CentralRankingConfig
from fedrec.algorithms.methods.fcf import FCFConfig
from fedrec.algorithms.methods.pmf import PMFConfig
from fedrec.config import (
    RunConfig,
    build_config,
    option_doc,
    option_rows,
    packaged_dataset_names,
    packaged_sections_text,
    parse_override,
    to_dict,
)
from fedrec.data.catalog import SPECS
from fedrec.errors import ConfigError


def _sections(algorithm: str) -> dict[str, dict[str, Any]]:
    """The packaged per-dataset sections of ``algorithm``."""
    data = yaml.safe_load(packaged_sections_text(algorithm)) or {}
    return {name: section or {} for name, section in (data.get("datasets") or {}).items()}


def _typed(cfg: RunConfig) -> dict[str, tuple[type, Any]]:
    """Every option with its type: 10 and 10.0 are equal, but not the same option value."""
    return {k: (type(v), v) for k, v in to_dict(cfg).items()}


def _in_code(cls: type[RunConfig], section: dict[str, Any]) -> RunConfig:
    """The config built in code: the dataclass's defaults plus a per-dataset section."""
    hints = typing.get_type_hints(cls)
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in section.items()}
    values = {k: float(v) if hints[k] is float and isinstance(v, int) else v
              for k, v in values.items()}
    return cls(**values)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_fedrec_run_resolves_the_dataclass_defaults_plus_the_packaged_section(
        algorithm: str) -> None:
    cls = ALGORITHMS[algorithm].config_cls
    assert _typed(build_config(cls, algorithm)) == _typed(cls())
    sections = _sections(algorithm)
    for dataset, section in sections.items():
        assert section  # a section that sets nothing is a mistake
        resolved = build_config(cls, algorithm, dataset)
        assert _typed(resolved) == _typed(_in_code(cls, section)), dataset
    no_section = next(name for name in SPECS if name not in sections)
    assert _typed(build_config(cls, algorithm, no_section)) == _typed(cls())


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_packaged_yaml_holds_only_per_dataset_sections_and_presets(algorithm: str) -> None:
    data = yaml.safe_load(packaged_sections_text(algorithm)) or {}
    assert set(data) <= {"datasets", "presets"}  # the defaults live in the dataclass only


def test_a_default_in_the_packaged_yaml_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "packaged_sections_text", lambda _: "rounds: 3\ndatasets: {}\n")
    with pytest.raises(ConfigError, match=r"fcf\.yaml: only datasets: and presets: sections"):
        build_config(FCFConfig, "fcf")


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_every_algorithm_has_a_paper_preset_that_resolves(algorithm: str) -> None:
    cls = ALGORITHMS[algorithm].config_cls
    assert "paper" in config.presets(algorithm)
    paper = config.presets(algorithm)["paper"]
    own = paper.pop("datasets", None) or {}
    for dataset in [None, *_sections(algorithm), *own]:
        cfg = build_config(cls, algorithm, dataset, preset="paper")
        for key, value in {**paper, **own.get(dataset, {})}.items():
            assert getattr(cfg, key) == value, (dataset, key)
        sources = config.config_sources(cls, algorithm, dataset, preset="paper")
        assert all(sources.get(k) in (None, "preset paper", f"preset paper, {dataset} section")
                   for k in paper)


def test_a_preset_sits_over_the_packaged_section_and_under_the_file_and_set(
        tmp_path: Path) -> None:
    from fedrec.algorithms.methods.fedgrec import FedGRecConfig

    default = build_config(FedGRecConfig, "fedgrec", "gowalla")
    paper = build_config(FedGRecConfig, "fedgrec", "gowalla", preset="paper")
    assert default.own_edge_gradient and not paper.own_edge_gradient
    assert paper.user_fit_steps == paper.user_fit_train_steps == 0
    # The options the preset does not set keep the packaged Gowalla section's values.
    assert paper.clients_per_round == default.clients_per_round == 1000
    f = tmp_path / "my.yaml"
    f.write_text("user_fit_steps: 7\n")
    cfg = build_config(FedGRecConfig, "fedgrec", "gowalla", f, ["own_edge_gradient=true"],
                       preset="paper")
    assert (cfg.user_fit_steps, cfg.own_edge_gradient, cfg.user_fit_train_steps) == (7, True, 0)
    assert config.config_sources(FedGRecConfig, "fedgrec", "gowalla", f,
                                 ["own_edge_gradient=true"], preset="paper") == {
        "rounds": "packaged gowalla section", "clients_per_round": "packaged gowalla section",
        "eval_every": "packaged gowalla section",  # own_edge_gradient: back at its default
        "user_fit_steps": f"file {f}", "user_fit_train_steps": "preset paper",
        "split": "packaged gowalla section", "plain_upload": "packaged gowalla section"}


def test_an_unknown_preset_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"^unknown preset 'papers' for fcf; known: paper, dp$"):
        build_config(FCFConfig, "fcf", preset="papers")


def test_config_show_preset_folds_the_preset_in(tmp_path: Path) -> None:
    text = config_show_text("feras", preset="paper")
    assert re.search(r"^hidden: 16 .*# from: preset paper, default 128", text, re.M)
    f = tmp_path / "paper.yaml"
    f.write_text(text)
    from fedrec.algorithms.methods.feras import FerasConfig

    assert build_config(FerasConfig, "feras", "cora", f) == build_config(
        FerasConfig, "feras", "cora", preset="paper")


def test_a_record_made_before_a_default_changed_reads_with_the_old_value() -> None:
    from fedrec.algorithms.methods.fedgrec import FedGRecConfig

    cfg = FedGRecConfig()
    old = {k: v for k, v in to_dict(cfg).items()
           if k not in ("own_edge_gradient", "user_fit_steps", "user_fit_train_steps")}
    filled = config.with_new_defaults(old, cfg)
    assert (filled["own_edge_gradient"], filled["user_fit_steps"],
            filled["user_fit_train_steps"]) == (False, 0, 0)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_config_show_lists_every_option_with_its_default_and_doc(algorithm: str) -> None:
    cls = ALGORITHMS[algorithm].config_cls
    text = config_show_text(algorithm)
    data = yaml.safe_load(text)
    names = [f.name for f in dataclasses.fields(cls)]
    assert list(data) == names  # no datasets: section that would override an edited value
    for name in names:
        doc = option_doc(cls, name)
        assert doc, name
        assert f"  # {doc}\n" in text, name
    # The packaged sections follow, verbatim but commented out: there to read, not applied.
    packaged = packaged_sections_text(algorithm)
    commented = "".join(f"# {line}".rstrip() + "\n" for line in packaged.splitlines())
    assert text.endswith(commented)
    assert ("datasets:" in text) == bool(_sections(algorithm))


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_option_rows_are_config_shows_rows(algorithm: str) -> None:
    # The docs' options tables (docs/hooks/fedrec_docs.py) and config show: one source.
    cls = ALGORITHMS[algorithm].config_cls
    text = config_show_text(algorithm)
    data = yaml.safe_load(text)
    rows = option_rows(cls)
    assert [r.name for r in rows] == list(data)
    for row in rows:
        assert row.doc == option_doc(cls, row.name) and row.type
        assert yaml.safe_load(row.default) == data[row.name], row.name  # the default, as shown
    assert packaged_dataset_names(algorithm) == list(_sections(algorithm))


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_config_show_reads_back_as_the_same_config(algorithm: str, tmp_path: Path) -> None:
    cls = ALGORITHMS[algorithm].config_cls
    sections = _sections(algorithm)
    shown = tmp_path / f"{algorithm}.yaml"
    shown.write_text(config_show_text(algorithm))
    # `config show NAME`: the defaults, on every dataset (a packaged section no longer applies
    # over a file that sets every option)...
    for dataset in (None, "ml-100k", *sections):
        assert _typed(build_config(cls, algorithm, dataset, shown)) == _typed(cls()), dataset
    # ...which is what no file resolves to where there is no packaged section.
    for dataset in (None, *(name for name in ("ml-100k", "cora") if name not in sections)):
        assert _typed(build_config(cls, algorithm, dataset, shown)) == _typed(
            build_config(cls, algorithm, dataset)), dataset
    # `config show NAME --dataset D`: what no file resolves to on D.
    for dataset in ("ml-100k", *sections):
        shown.write_text(config_show_text(algorithm, dataset))
        assert "datasets" not in yaml.safe_load(shown.read_text())
        assert _typed(build_config(cls, algorithm, dataset, shown)) == _typed(
            build_config(cls, algorithm, dataset)), dataset


def test_an_edited_copy_of_config_show_overrides_the_defaults(tmp_path: Path) -> None:
    # What users do: copy `config show`, change a top-level value, run with --config.
    text = config_show_text("fcf")
    assert "\nlr_user: 0.5 " in text
    edited = tmp_path / "mine.yaml"
    edited.write_text(text.replace("\nlr_user: 0.5 ", "\nlr_user: 2.0 "))
    for dataset in (None, "ml-100k", "gowalla"):
        cfg = build_config(FCFConfig, "fcf", dataset, edited)
        assert cfg == dataclasses.replace(FCFConfig(), lr_user=2.0)
    # On gowalla too: the copy sets every option, and the packaged gowalla section (lr_user 10)
    # no longer overrides the value the user edited.


def _edit_rounds(text: str, rounds: int) -> str:
    """``text`` with its top-level ``rounds:`` line set to ``rounds``, as a user edits it."""
    edited, n = re.subn(r"^rounds: \d+", f"rounds: {rounds}", text, flags=re.M)
    assert n == 1
    return edited


@pytest.mark.parametrize("algorithm, dataset", [("fedgnn", "ml-100k"), ("fcf", "gowalla")])
@pytest.mark.parametrize("show_dataset", [False, True], ids=["show", "show-dataset"])
def test_the_readme_edit_of_config_show_is_what_runs(
        algorithm: str, dataset: str, show_dataset: bool, tmp_path: Path) -> None:
    # README: `fedrec config show ALGO [--dataset D] > my.yaml`, edit rounds, `fedrec run ALGO
    # --dataset D --config my.yaml`. The packaged D section sets rounds (FedGNN ML-100K 640,
    # FCF Gowalla 100): once the shown file carried it as its own datasets: section, which
    # overrode the edited top-level value.
    assert "rounds" in _sections(algorithm)[dataset]
    mine = tmp_path / "my.yaml"
    shown = config_show_text(algorithm, dataset) if show_dataset else config_show_text(algorithm)
    mine.write_text(_edit_rounds(shown, 2))
    cfg = resolve_config(algorithm, dataset, mine)  # what `fedrec run` resolves
    assert cfg.rounds == 2
    # Everything else is what the shown file said: the packaged D settings with --dataset D,
    # the defaults without.
    base = resolve_config(algorithm, dataset if show_dataset else None)
    assert cfg == dataclasses.replace(base, rounds=2)
    sources = resolve_config_sources(algorithm, dataset, mine)
    assert sources["rounds"] == f"file {mine}"
    assert set(sources.values()) <= {f"file {mine}"}


def test_config_show_dataset_folds_in_the_packaged_section_and_marks_it() -> None:
    text = config_show_text("fedgnn", "ml-100k")
    data = yaml.safe_load(text)
    assert "datasets" not in data
    section = _sections("fedgnn")["ml-100k"]  # the merge (<<: *tuned) read
    assert data["rounds"] == 640 and data["lr"] == section["lr"] == 0.2
    cls = ALGORITHMS["fedgnn"].config_cls
    for f in dataclasses.fields(cls):
        line = next(ln for ln in text.splitlines() if ln.startswith(f"{f.name}: "))
        if data[f.name] != (list(f.default) if isinstance(f.default, tuple) else f.default):
            assert f.name in section, f.name
            assert line.endswith(f"# from: packaged ml-100k section, default "
                                 f"{config._yaml_scalar(f.default)}"), line
        else:
            assert "# from:" not in line, line
    assert "  # from: packaged ml-100k section, default 100\n" in text  # rounds
    # A dataset without a packaged section: the defaults, nothing marked.
    plain = config_show_text("fedgnn", "cora")
    assert "# from:" not in plain and "has no packaged cora section" in plain
    assert yaml.safe_load(plain) == yaml.safe_load(config_show_text("fedgnn"))
    with pytest.raises(ConfigError, match="config show --dataset takes a catalogue name, got "
                                          "'ml100k'"):
        config_show_text("fedgnn", "ml100k")


def test_config_sources_name_the_layer_of_every_option_not_at_its_default(
        tmp_path: Path) -> None:
    path = tmp_path / "my.yaml"
    path.write_text("rounds: 7\ndim: 32\nlr_user: 0.7\n"
                    "datasets:\n  gowalla: {reg: 0.5, lr_user: 3.0}\n")
    sources = config.config_sources(FCFConfig, "fcf", "gowalla", path, ["local_steps=2"])
    assert sources == {
        "rounds": f"file {path}",
        "eval_every": "packaged gowalla section",  # 20; the packaged dim 64 the file set back
        "reg": f"file {path}, gowalla section",
        "local_steps": "--set",
        "lr_user": f"file {path}, gowalla section",
    }
    assert list(sources) == [f.name for f in dataclasses.fields(FCFConfig) if f.name in sources]
    assert resolve_config_sources("fcf", "gowalla", path, {"local_steps": 2}) == sources
    # Nothing but defaults: nothing to say.
    assert config.config_sources(FCFConfig, "fcf") == {}
    assert config.config_sources(FCFConfig, "fcf", overrides=["rounds=100"]) == {}  # the default
    assert resolve_config_sources("pmf", "gowalla") == dict.fromkeys(
        _sections("pmf")["gowalla"], "packaged gowalla section")


def test_defaults_are_what_fedrec_run_used() -> None:
    # FCF's dataclass once said lr_user 0.05, reg 0.01 while `fedrec run` used 0.5 and 0.1: the
    # dataclass is now the only source of both.
    cfg = build_config(FCFConfig, "fcf", "ml-100k")  # no ml-100k section: plain defaults
    assert isinstance(cfg, FCFConfig)
    assert cfg == FCFConfig()
    assert (cfg.rounds, cfg.dim, cfg.lr, cfg.lr_user, cfg.reg, cfg.eval_every) == (
        100, 32, 0.01, 0.5, 0.1, 10)
    assert to_dict(cfg)["rounds"] == 100


def test_each_algorithm_resolves_in_its_own_config_class() -> None:
    # CentralRankingConfig holds LightGCN's defaults: NeuMF and NGCF have their own classes, and
    # fedrec run (resolve_config) picks the registered one.
    for name in ("lightgcn", "ngcf", "neumf"):
        cfg = resolve_config(name)
        assert type(cfg) is ALGORITHMS[name].config_cls and cfg == ALGORITHMS[name].config_cls()
    assert resolve_config("neumf") != CentralRankingConfig()
    with pytest.raises(ConfigError, match="unknown algorithm 'nope'"):
        resolve_config("nope")
    with pytest.raises(ConfigError, match="unknown algorithm 'nope'"):
        config_show_text("nope")


def test_per_dataset_section_applies_only_to_that_dataset() -> None:
    section = _sections("pmf")["gowalla"]
    base = build_config(PMFConfig, "pmf")
    gow = build_config(PMFConfig, "pmf", "gowalla")
    for key, value in section.items():
        assert getattr(gow, key) == value
    assert any(getattr(base, k) != v for k, v in section.items())  # the section changes things
    assert build_config(PMFConfig, "pmf", "ml-100k") == base


def test_config_file_layer_then_set_overrides(tmp_path: Path) -> None:
    path = tmp_path / "my.yaml"
    path.write_text(
        "# my experiment\nrounds: 7\ndim: 16\nlr: 0.02\n"
        "datasets:\n  ml-100k: {dim: 12, reg: 0.5}\n  gowalla: {dim: 99}\n"
    )
    cfg = build_config(FCFConfig, "fcf", "ml-100k", path)
    assert (cfg.rounds, cfg.dim, cfg.lr, cfg.reg) == (7, 12, 0.02, 0.5)
    assert cfg.lr_user == FCFConfig().lr_user  # untouched keys keep the defaults
    # The user's top-level value beats the packaged per-dataset one (later layers win).
    gow = build_config(FCFConfig, "fcf", "gowalla", path)
    assert gow.dim == 99 and gow.lr == 0.02
    path2 = tmp_path / "top.yaml"
    path2.write_text("lr: 0.03\n")
    assert build_config(FCFConfig, "fcf", "gowalla", path2).lr == 0.03
    # --set beats everything.
    cfg = build_config(FCFConfig, "fcf", "ml-100k", path, ["dim=3", "rounds=2"])
    assert (cfg.rounds, cfg.dim, cfg.reg) == (2, 3, 0.5)
    # A dict of overrides (the Python API) works the same way.
    assert build_config(FCFConfig, "fcf", "ml-100k", path, {"dim": 4}).dim == 4
    # An empty file is no layer at all.
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert build_config(FCFConfig, "fcf", None, empty) == build_config(FCFConfig, "fcf")


def test_set_values_are_coerced_to_the_option_type() -> None:
    cfg = build_config(FCFConfig, "fcf", overrides=[
        "rounds=3", "lr=1e-3", "lr_user= 2", "dropout=0.25", "dim=8.0", "seed=42", "reg=0",
    ])
    assert cfg.rounds == 3 and type(cfg.rounds) is int
    assert cfg.lr == 0.001 and type(cfg.lr) is float
    assert cfg.lr_user == 2.0 and type(cfg.lr_user) is float
    assert cfg.dim == 8 and type(cfg.dim) is int
    assert cfg.dropout == 0.25 and cfg.seed == 42 and cfg.reg == 0.0
    assert build_config(FCFConfig, "fcf", overrides=["lr=5E-4"]).lr == 0.0005
    assert build_config(FCFConfig, "fcf", overrides=["lr=2.5e-2"]).lr == 0.025
    assert parse_override("dim = 8") == ("dim", 8)
    assert parse_override("note=a=b") == ("note", "a=b")  # only the first '=' splits


def test_option_flags_are_shell_words_that_read_back_as_the_values() -> None:
    import shlex

    values = {"views": ["demographics"], "widths": (64, 32), "lr": 0.05, "delta": 1e-05,
              "batch": None, "secure_aggregation": False, "implicit": "per-user",
              "share": "embeddings+weights", "note": "yes", "rounds": 3}
    text = config.option_flags("--set", values)
    # Scalars print as before (what the reproductions' tables have shown); lists as YAML.
    assert " --set lr=0.05 " in text and " --set secure_aggregation=False " in text
    assert " --set 'views=[demographics]' " in text and " --set implicit=per-user " in text
    words = shlex.split(text)
    assert words[::2] == ["--set"] * len(values)
    read = dict(parse_override(w) for w in words[1::2])
    assert read == {**values, "widths": [64, 32]}
    assert type(read["note"]) is str and type(read["delta"]) is float
    assert config.option_flags("--data-opt", {}) == ""


def test_exponent_floats_in_a_config_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("lr: 1e-3\nreg: 5e-5\n")
    cfg = build_config(FCFConfig, "fcf", None, path)
    assert (cfg.lr, cfg.reg) == (0.001, 5e-5)


def test_unknown_key_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="learning_rate") as err:
        build_config(FCFConfig, "fcf", overrides=["learning_rate=0.1"])
    assert "lr" in str(err.value)  # and the valid names are listed
    path = tmp_path / "c.yaml"
    path.write_text("rounds: 3\nbatchsize: 10\n")
    with pytest.raises(ConfigError, match="batchsize"):
        build_config(FCFConfig, "fcf", None, path)
    with pytest.raises(ConfigError, match="batch_size"):  # a PMF option is not an FCF option
        build_config(FCFConfig, "fcf", overrides={"batch_size": 5})
    path.write_text("datasets:\n  ml-100k: {dims: 3}\n")
    with pytest.raises(ConfigError, match="dims"):
        build_config(FCFConfig, "fcf", "ml-100k", path)


@pytest.mark.parametrize("item, pattern", [
    ("rounds=abc", "rounds must be an integer"),
    ("rounds=2.5", "rounds must be an integer"),
    ("rounds=true", "rounds must be an integer"),
    ("dim=[1, 2]", "dim must be an integer"),
    ("lr=fast", "lr must be a number"),
    ("lr=true", "lr must be a number"),
    ("lr=nan", "lr must be a number"),
    ("lr=inf", "lr must be a finite number, got inf"),
    ("lr=.inf", "lr must be a finite number, got inf"),
    ("lr_user=-inf", "lr_user must be a finite number, got -inf"),
    ("secagg_clip=1e999", "secagg_clip must be a finite number, got inf"),
    ("lr=-1", "lr must be > 0"),
    ("lr=0", "lr must be > 0"),
    ("lr_user=0", "lr_user must be > 0"),
    ("reg=-0.1", "reg must be >= 0"),
    ("dropout=1.0", "dropout must be <= 0.99"),
    ("dropout=-0.1", "dropout must be >= 0"),
    ("rounds=0", "rounds must be >= 1"),
    ("dim=0", "dim must be >= 1"),
    ("local_steps=0", "local_steps must be >= 1"),
    ("clients_per_round=-1", "clients_per_round must be >= 0"),
    ("eval_every=0", "eval_every must be >= 1"),
    ("topk=0", "topk must be >= 1"),
])
def test_wrong_type_or_out_of_range(item: str, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        build_config(FCFConfig, "fcf", overrides=[item])


def test_pmf_specific_range() -> None:
    with pytest.raises(ConfigError, match="batch_size"):
        build_config(PMFConfig, "pmf", overrides=["batch_size=0"])


def test_malformed_inputs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rounds: 3\ndim: [1, 2\nlr: 0.1\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml line \d+: not valid YAML") as err:
        build_config(FCFConfig, "fcf", None, bad)
    line = int(str(err.value).split("line ")[1].split(":")[0])
    assert 2 <= line <= 4  # points at the broken flow sequence, not at line 1
    tabs = tmp_path / "tabs.yaml"
    tabs.write_text("rounds: 3\n\tdim: 4\n")
    with pytest.raises(ConfigError, match="line 2"):
        build_config(FCFConfig, "fcf", None, tabs)
    listing = tmp_path / "list.yaml"
    listing.write_text("- rounds\n- 3\n")
    with pytest.raises(ConfigError, match="mapping"):
        build_config(FCFConfig, "fcf", None, listing)
    with pytest.raises(ConfigError, match="does not exist"):
        build_config(FCFConfig, "fcf", None, tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="key=value"):
        build_config(FCFConfig, "fcf", overrides=["rounds"])
    with pytest.raises(ConfigError, match="YAML"):
        build_config(FCFConfig, "fcf", overrides=["dim=[1"])
    with pytest.raises(ConfigError, match="unknown algorithm 'no-such-algorithm'"):
        config_show_text("no-such-algorithm")


def test_config_file_that_cannot_be_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory, not a YAML file"):
        build_config(FCFConfig, "fcf", None, tmp_path)  # it said "does not exist"
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("rounds: 3\n# r\xe9glages\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin\.yaml line 2: not UTF-8 text \(byte 0xe9\)"):
        build_config(FCFConfig, "fcf", None, latin)


def test_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("rounds: 2\ndim: 4\nrounds: 3\n")
    with pytest.raises(ConfigError, match=r"dup\.yaml line 3: 'rounds' is given twice"):
        build_config(FCFConfig, "fcf", None, path)
    path.write_text("datasets:\n  ml-100k: {dim: 3, dim: 4}\n")
    with pytest.raises(ConfigError, match="'dim' is given twice"):
        build_config(FCFConfig, "fcf", "ml-100k", path)
    # A merge's keys may be overridden: that is what a merge is for (the packaged fedgnn.yaml).
    path.write_text("datasets:\n  ml-100k: &m {dim: 3, reg: 0.5}\n  ml-1m: {<<: *m, dim: 5}\n")
    assert build_config(FCFConfig, "fcf", "ml-1m", path).dim == 5


def test_unknown_dataset_section_is_named(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text("rounds: 3\ndatasets:\n  ml100k: {dim: 3}\n")
    for dataset in ("ml-100k", None):  # whichever dataset runs: the section is a mistake
        with pytest.raises(ConfigError, match=r"typo\.yaml: datasets: unknown dataset 'ml100k'"):
            build_config(FCFConfig, "fcf", dataset, path)
    path.write_text("datasets: [ml-100k]\n")
    with pytest.raises(ConfigError, match="datasets: expected a mapping"):
        build_config(FCFConfig, "fcf", "ml-100k", path)
    path.write_text("datasets:\n  ml-100k: 3\n")
    with pytest.raises(ConfigError, match="datasets: ml-100k: expected a mapping"):
        build_config(FCFConfig, "fcf", "ml-100k", path)
