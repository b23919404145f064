"""RunOptions (fedrec.options): one set of defaults, one validation, used by every entry point."""

from __future__ import annotations

import argparse
import ast
import dataclasses
from pathlib import Path

import pytest

import fedrec
from fedrec.cli.main import build_parser
from fedrec.cli.options import run_options_of
from fedrec.errors import ConfigError
from fedrec.federation.secrets import ClientSecrets
from fedrec.options import RunOptions, option_field
from fedrec.rounds import RoundCheckpoint

SRC = Path(fedrec.__file__).resolve().parent


def test_defaults() -> None:
    opts = RunOptions()
    assert (opts.engine, opts.device, opts.progress, opts.checkpoint_every) == (
        "simulator", "cpu", True, 1)
    assert (opts.resume, opts.log_dir, opts.stop_after, opts.max_users) == (False, None, None,
                                                                              None)
    assert (opts.nodes, opts.timeout, opts.call_timeout, opts.straggler_timeout,
            opts.connect_timeout, opts.executor) == (3, 1800.0, 300.0, 60.0, 120.0, "warm")
    assert opts.client_secret is None and not opts.experimenter_oracle and not opts.keep_workdir
    # The class attributes are the defaults (RoundCheckpoint's is read from there).
    assert RunOptions.checkpoint_every == RoundCheckpoint.every == 1


@pytest.mark.parametrize(("options", "message"), [
    ({"engine": "ray"}, "engine must be one of simulator, flower, got 'ray'"),
    ({"checkpoint_every": 0}, "checkpoint_every must be at least 1, got 0"),
    ({"stop_after": 0}, "stop_after must be at least 1, got 0"),
    ({"max_users": 0}, "max_users must be at least 1, got 0"),
    ({"engine": "flower", "nodes": 0}, "nodes must be at least 1, got 0"),
    ({"engine": "flower", "timeout": 0.0}, "timeout must be > 0 seconds, got 0.0"),
    ({"engine": "flower", "call_timeout": float("nan")}, "call_timeout must be > 0 seconds"),
    ({"engine": "flower", "connect_timeout": -1.0}, "connect_timeout must be > 0 seconds"),
    ({"engine": "flower", "straggler_timeout": -1.0}, "straggler_timeout must be >= 0 seconds"),
    ({"engine": "flower", "executor": "cold"}, "executor must be one of warm, subprocess"),
    ({"device": "gpu"}, "unknown device 'gpu'; use cpu or cuda"),
    ({"client_secret": "xyz"}, "the client secret must be hex digits"),
    ({"client_secret": "ab"}, "a client secret has 32 bytes"),
    # Another engine's option is refused, not ignored.
    ({"nodes": 5}, "nodes: options of engine='flower' only"),
    ({"timeout": 60.0, "executor": "subprocess"},
     "timeout, executor: options of engine='flower' only"),
    ({"engine": "flower", "resume": True}, "resume: options of engine='simulator' only"),
    ({"engine": "flower", "device": "cuda"}, "device: options of engine='simulator' only"),
])
def test_every_check_is_a_one_line_config_error(options: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        RunOptions(**options)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_of_names_unknown_options_and_explicit_options_of_the_other_engine() -> None:
    with pytest.raises(ConfigError, match=r"^unknown run option\(s\) colour; known: engine,"):
        RunOptions.of(None, colour="blue")
    # At its default, but asked for by name: the caller meant a Flower run.
    with pytest.raises(ConfigError, match=r"^nodes: options of engine='flower' only$"):
        RunOptions.of(None, nodes=3)
    base = RunOptions(progress=False)
    assert RunOptions.of(base) is base
    assert RunOptions.of(base, checkpoint_every=4) == RunOptions(progress=False,
                                                                 checkpoint_every=4)


def test_a_hex_secret_becomes_client_secrets() -> None:
    opts = RunOptions(client_secret="ab" * 32)
    assert isinstance(opts.client_secret, ClientSecrets) and opts.client_secret.given
    assert opts.client_secret.root_bytes() == bytes.fromhex("ab" * 32)
    assert "ab" * 32 not in repr(opts)  # ClientSecrets hides its root


def test_with_engine_checks_again_and_refuse_names_what_is_set() -> None:
    assert RunOptions().with_engine("flower").engine == "flower"
    with pytest.raises(ConfigError, match=r"^checkpoint_every: options of engine='simulator'"):
        RunOptions(checkpoint_every=2).with_engine("flower")
    with pytest.raises(ConfigError, match=r"^resume, log_dir: not taken by here$"):
        RunOptions(resume=True, log_dir="x").refuse(["resume", "stop_after", "log_dir"], "here")
    RunOptions().refuse(["resume", "stop_after"], "here")  # at their defaults


def test_torch_device() -> None:
    assert str(RunOptions().torch_device()) == "cpu"
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA device is available"):
            RunOptions(device="cuda").torch_device()


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_the_cli_flags_take_the_fields_defaults() -> None:
    run = run_options_of(_parse("run", "pmf", "--dataset", "ml-100k"), "simulator")
    assert dataclasses.replace(run, client_secret=None) == RunOptions()
    deploy = run_options_of(_parse("deploy", "fcf", "--dataset", "ml-100k"), "flower")
    assert dataclasses.replace(deploy, client_secret=None) == RunOptions(engine="flower")
    given = run_options_of(_parse("deploy", "fcf", "--dataset", "ml-100k", "--nodes", "2",
                                  "--timeout", "60", "--quiet", "--executor", "subprocess",
                                  "--client-secret", "cd" * 32), "flower")
    assert (given.nodes, given.timeout, given.progress, given.executor) == (
        2, 60.0, False, "subprocess")
    assert given.client_secret.root_bytes() == bytes.fromhex("cd" * 32)
    rep = run_options_of(_parse("reproduce", "feras", "--device", "cpu"), "simulator")
    assert rep == RunOptions()  # no --client-secret there: none drawn
    assert option_field("timeout").metadata["engine"] == "flower"


def _literal_defaults(path: Path) -> list[tuple[str, object]]:
    """(name, literal default) of every parameter and every add_argument(..., default=...) in
    ``path`` whose name is a run option's (None aside: "not given", as the round loop's hooks
    say it, is no value that can drift)."""
    names = set(RunOptions.__dataclass_fields__) | {"client_secrets"}  # the old spelling
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults,
                             strict=True))
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                      if d is not None]
            found += [(arg.arg, d.value) for arg, d in pairs
                      if arg.arg in names and isinstance(d, ast.Constant) and d.value is not None]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            flags = [ast.literal_eval(x) for x in node.args if isinstance(x, ast.Constant)]
            dest = {flag.lstrip("-").replace("-", "_") for flag in flags}
            for kw in node.keywords:
                if (kw.arg == "default" and dest & names and isinstance(kw.value, ast.Constant)
                        and kw.value.value is not None):
                    found.append((sorted(dest & names)[0], kw.value.value))
    return found


#: The modules that run a job: each takes a RunOptions and states no default of its own.
RUNNERS = ("api.py", "experiment.py", "rounds.py", "cli", "engines", "reproduce")


def test_no_runner_restates_a_run_options_default() -> None:
    """Every default is RunOptions'; a function or a flag of a module that runs jobs that
    states one of its own (a literal default for a parameter named like an option) would drift
    from it again, as the deployment's timeout did (900 s in one place, 1800 s in another)."""
    paths = [p for name in RUNNERS for p in sorted((SRC / name).rglob("*.py")
                                                   if (SRC / name).is_dir() else [SRC / name])]
    restated = {str(p.relative_to(SRC)): found for p in paths if (found := _literal_defaults(p))}
    assert restated == {}


def test_every_entry_point_refuses_what_it_does_not_take_before_it_starts() -> None:
    """Checked before the dataset name is even looked at ("nope" is no dataset)."""
    from fedrec.engines.common import simulate
    from fedrec.engines.flower.deploy import deploy
    from fedrec.engines.flower.simulation import simulate_on_flower
    from fedrec.experiment import run_experiment

    with pytest.raises(ConfigError, match=r"^nodes: options of engine='flower' only$"):
        run_experiment("fcf", "nope", options=RunOptions(engine="flower", nodes=2))
    with pytest.raises(ConfigError, match=r"^max_users: not taken by fedrec run"):
        run_experiment("fcf", "nope", options=RunOptions(max_users=10))
    with pytest.raises(ConfigError, match=r"^checkpoint_every: not taken by simulate"):
        simulate("fcf", "nope", options=RunOptions(checkpoint_every=2))
    with pytest.raises(ConfigError, match=r"^resume: options of engine='simulator' only$"):
        deploy("fcf", "nope", options=RunOptions(resume=True))
    with pytest.raises(ConfigError, match=r"^straggler_timeout: not taken by simulate_on_flower"):
        simulate_on_flower("fcf", "nope",
                           options=RunOptions(engine="flower", straggler_timeout=5.0))
    with pytest.raises(ConfigError, match=r"^device: options of engine='simulator' only$"):
        fedrec.run("fcf", "nope", engine="flower", device="cuda")
    with pytest.raises(ConfigError, match=r"^checkpoint_every must be at least 1, got 0$"):
        fedrec.run("fcf", "nope", options=RunOptions(progress=False), checkpoint_every=0)
