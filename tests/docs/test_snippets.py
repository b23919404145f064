"""Every command and Python snippet of the README and of the docs site's Get started, Tutorials
and How-to pages runs (issue 39 item 4), so the docs cannot drift from the CLI.

What runs: every fenced ``bash`` and ``python`` block of those pages (the pages are read from
``mkdocs.yml``'s nav, so a new tutorial is covered by being listed) and of any other page under
``docs/`` that has such a block, in order, each page in a fresh temporary working directory (a
page's later commands read what its earlier ones wrote: ``fedrec results runs/``). A
``fedrec ...`` command runs in-process through :func:`fedrec.cli.main.main` on a small slice:
``fedrec run`` gets ``--set rounds=1`` appended (a later ``--set`` wins) plus the per-method
slices of :data:`SLICES` that the command does not set itself; ``fedrec reproduce`` gets
``--quick`` and ``--report-only`` (``--quick --only P`` where the doc names prefixes: a few
seconds). It must exit 0, except ``fedrec run --device cuda`` on a machine without CUDA, which
must be the one-line error the GPU page quotes. A Python block is executed with ``exec`` in a
fresh namespace. ``export NAME=VALUE`` and ``NAME=VALUE`` lines are evaluated by ``bash`` and
applied; ``$NAME`` is expanded; ``> FILE`` writes the command's output there. The files a
tutorial calls "yours" (``my.csv``, ``clicks.tsv``, ``my_graph/``) are written small into the
working directory first (:data:`USER_FILES`), and what a page says its commands show is checked
where it is a fact about the runs (:data:`CLAIMS`).

What does not run, each for a reason this module checks:

* installs and CI's own lines (``python3 -m venv``, ``pip install``, ``ruff``, ``lint-imports``,
  ``pytest``, ``mkdocs``, ``fedrec pages``): ``.ci/run`` runs the README's test command
  verbatim (checked), builds the site and checks the generated pages; ``tensorboard --logdir``
  is a server that does not end;
* ``fedrec deploy``: a real Flower deployment (SuperLink and SuperNode processes) costs tens of
  seconds. Its block carries the marker ``<!-- docs-test: covered by FILE::TEST, ... -->``
  naming the tests under ``tests/engines`` that deploy that algorithm; this module checks that
  each named test exists and its module deploys the command's algorithm, and runs everything
  of the command but the processes: its flags, its run options, its configuration and the
  Flower job checks :func:`fedrec.engines.flower.deploy.deploy` makes before it starts any;
* a Python block marked ``<!-- docs-test: covered by ... -->`` (the Flower engine from Python)
  is compiled, and every ``fedrec.NAME(...)`` call in it is bound to ``NAME``'s signature;
* a Python block marked ``<!-- docs-test: excerpt of PATH -->`` (the walk-through of a method's
  package) is an excerpt with ``...``: every class, function, method, field and constant it
  shows must be defined in ``PATH``.

A command the test cannot place (another program) fails it, as does a command outside a
fenced block (an indented ``fedrec ...`` line would escape the test). Budget: the whole module
runs in well under a minute of CPU (the measured figure is in the commit that changed it).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib
import inspect
import io
import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
#: The nav sections whose pages' code runs (mkdocs.yml), and the README.
SECTIONS = ("Get started", "Tutorials", "How-to")
#: The marker before a fenced block that says how it is checked instead of run.
MARKER = re.compile(r"^<!-- docs-test: (covered by|excerpt of) (.+?) -->$")
FENCE = re.compile(r"^```(\w*)\s*$")
#: Commands that are not run: (first words, why). A line of the README that ``.ci/run`` holds
#: verbatim is CI's too (test_ci_runs_the_readme_test_command).
SKIPPED = (
    (("python3", "-m", "venv"), "an install: .ci/run makes the environment"),
    (("pip", "install"), "an install: .ci/run installs the package and its extras"),
    (("ruff",), "CI's lint (.ci/run)"),
    (("lint-imports",), "CI's layer check (.ci/run)"),
    (("pytest",), "the test suite itself (.ci/run)"),
    (("mkdocs",), ".ci/run builds the site (mkdocs build --strict)"),
    (("tensorboard",), "a server that runs until stopped"),
    (("fedrec", "pages"), ".ci/run runs `fedrec pages --check` over the committed results (a "
                          "minute or more); tests/reproduce/test_pages.py runs it on a small tree"),
)
#: Slices appended to a ``fedrec run`` of the method, each only where the command does not set
#: the option itself. FCF's default cohort is every client, and its DP preset's secure sum of
#: 943 clients costs 15 s a round; FedGRec's secure sums (its warm-up sums every client) cost
#: 73 s a round under ``--preset paper``: both are run in tests/algorithms, not here.
SLICES: dict[str, dict[str, str]] = {
    "fcf": {"clients_per_round": "20"},
    "fedgrec": {"secure_aggregation": "false"},
}
CUDA_ERROR = "no CUDA device is available"


def code_pages() -> list[str]:
    """Every page with a fenced ``bash`` or ``python`` block: the README, the nav's tutorial
    sections, and any other page under ``docs/`` that shows a command (``docs/privacy.md``)."""
    pages = nav_pages()
    pages += [p.relative_to(REPO).as_posix() for p in sorted((REPO / "docs").rglob("*.md"))
              if "hooks" not in p.parts and p.relative_to(REPO).as_posix() not in pages
              and any(b.lang in ("bash", "python") for b in blocks(p.read_text("utf-8")))]
    return pages


def nav_pages() -> list[str]:
    """The README and the pages of :data:`SECTIONS` in mkdocs.yml's nav, as repository paths."""

    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml names a Python callable (the slug function): not needed here.
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    nav = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader)["nav"]
    pages = ["README.md"]
    for section in nav:
        for title, entries in section.items():
            if title in SECTIONS:
                pages += [f"docs/{page}" for entry in entries for page in entry.values()]
    return pages


@dataclasses.dataclass
class Block:
    """A fenced code block: its language, first code line (1-based), text and marker."""

    lang: str
    line: int
    text: str
    marker: tuple[str, str] | None


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a markdown text; a marker line (:data:`MARKER`) applies to the next
    fence when only blank lines stand between them."""
    found, marker, lines = [], None, text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if (m := MARKER.match(line.strip())) is not None:
            marker = (m.group(1), m.group(2))
        elif (fence := FENCE.match(line.strip())) is not None:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), 0)
            assert end, f"line {i + 1}: a fence that is never closed"
            found.append(Block(fence.group(1), i + 2, "\n".join(lines[i + 1:end]), marker))
            marker, i = None, end
        elif line.strip():
            marker = None
        i += 1
    return found


def logical_lines(block: Block) -> list[tuple[int, str]]:
    """A shell block's commands: continuation lines joined, comment-only lines dropped."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for k, raw in enumerate(block.text.splitlines()):
        if not pending:
            start = block.line + k
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line, pending = pending + raw, ""
        if line.strip() and not line.strip().startswith("#"):
            out.append((start, line.strip()))
    return out


@dataclasses.dataclass
class Shell:
    """What a page's commands share: its working directory's shell variables."""

    variables: dict[str, str] = dataclasses.field(default_factory=dict)
    ran: list[str] = dataclasses.field(default_factory=list)

    def expand(self, token: str) -> str:
        def value(m: re.Match) -> str:
            name = m.group(1) or m.group(2)
            return self.variables.get(name, os.environ.get(name, ""))

        return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, token)


ASSIGNMENT = re.compile(r"^(export\s+)?([A-Za-z_]\w*)=(.*)$")


def fedrec_call(argv: list[str]) -> tuple[int, str, str]:
    """``fedrec ARGV`` in this process: exit status, stdout, stderr."""
    import torch

    from fedrec.cli.main import main

    out, err, threads = io.StringIO(), io.StringIO(), torch.get_num_threads()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            rc = exc.code if isinstance(exc.code, int) else 1
    torch.set_num_threads(threads)  # fedrec run sets the process's threads
    return rc, out.getvalue(), err.getvalue()


def option_given(argv: list[str], flag: str) -> bool:
    return flag in argv or any(a.startswith(flag + "=") for a in argv)


def sliced(argv: list[str]) -> list[str]:
    """A doc's ``fedrec`` command as this test runs it (see the module docstring)."""
    if argv[0] == "run":
        given = {argv[i + 1].split("=", 1)[0] for i, a in enumerate(argv[:-1]) if a == "--set"}
        slices = {"rounds": "1", **SLICES.get(argv[1], {})}
        extra = [x for key, v in slices.items() if key == "rounds" or key not in given
                 for x in ("--set", f"{key}={v}")]
        return [*argv, *extra]
    if argv[0] == "reproduce":
        extra = [] if option_given(argv, "--quick") else ["--quick"]
        only = option_given(argv, "--only") or option_given(argv, "--report-only")
        return [*argv, *extra, *([] if only else ["--report-only"])]
    return argv


def expected_status(argv: list[str]) -> tuple[int, str]:
    """The exit status a command must end with, and a text its stderr must then hold."""
    if argv[0] == "run" and "--device" in argv and argv[argv.index("--device") + 1] == "cuda":
        import torch

        if not torch.cuda.is_available():
            return 2, CUDA_ERROR  # what docs/how-to/gpu.md says happens
    return 0, ""


def covered_tests(spec: str) -> list[tuple[Path, str]]:
    """The tests a ``covered by`` marker names, each checked to exist."""
    named = []
    for item in spec.split(","):
        path, _, test = item.strip().partition("::")
        file = REPO / path
        assert file.is_file(), f"the marker names {path}, which does not exist"
        tree = ast.parse(file.read_text(encoding="utf-8"))
        assert test in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, \
            f"the marker names {item.strip()}, which does not exist"
        named.append((file, test))
    return named


def check_deploy(argv: list[str], marker: tuple[str, str] | None) -> None:
    """A ``fedrec deploy`` command: covered by a named engine test that deploys its algorithm,
    and accepted by every check a deployment makes before it starts a process."""
    from fedrec.cli.main import build_parser
    from fedrec.cli.options import run_options_of
    from fedrec.engines.common import resolve
    from fedrec.engines.flower.deploy import check_flower_job
    from fedrec.experiment import check_before_loading

    assert marker is not None and marker[0] == "covered by", \
        "fedrec deploy is not run here: mark its block '<!-- docs-test: covered by FILE::TEST -->'"
    args = build_parser().parse_args(argv)
    sources = [file.read_text(encoding="utf-8") for file, _ in covered_tests(marker[1])]
    assert any(f'"{args.algorithm}"' in s and "deploy(" in s for s in sources), \
        f"no test the marker names deploys {args.algorithm}"
    run_options_of(args, "flower")
    spec, cfg = resolve(args.algorithm, args.dataset, args.config, args.set or [], args.preset)
    check_flower_job(args.algorithm, spec, cfg)
    check_before_loading(spec, args.dataset)


def skipped(words: list[str]) -> str | None:
    for prefix, why in SKIPPED:
        if tuple(words[:len(prefix)]) == prefix:
            return why
    return None


def run_command(shell: Shell, where: str, line: str, block: Block) -> None:
    """One logical line of a shell block (``&&``-joined commands run in turn)."""
    if (m := ASSIGNMENT.match(line)) is not None:
        script = f'{m.group(2)}={m.group(3)}; printf %s "${m.group(2)}"'  # bash evaluates it
        value = subprocess.run(["bash", "-c", script], env={**os.environ, **shell.variables},
                               capture_output=True, text=True, check=True).stdout
        shell.variables[m.group(2)] = value
        if m.group(1):
            os.environ[m.group(2)] = value  # the workdir fixture restores the environment
        return
    if line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines():
        return  # CI runs it verbatim
    words = [shell.expand(w) for w in shlex.split(line, comments=True)]
    commands: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            commands.append([])
        else:
            commands[-1].append(word)
    for command in commands:
        redirect = None
        if ">" in command:
            k = command.index(">")
            command, redirect = command[:k], command[k + 1]
        while command and ASSIGNMENT.match(command[0]):
            command = command[1:]  # VAR=value before a command: only CI's lines have it
        command[0] = command[0].removeprefix(".venv/bin/")
        if skipped(command):
            continue
        assert command[0] == "fedrec", f"{where}: the test does not know how to run {command[0]}"
        argv = command[1:]
        if argv[0] == "deploy":
            check_deploy(argv, block.marker)
            continue
        argv = sliced(argv)
        status, must_say = expected_status(argv)
        rc, out, err = fedrec_call(argv)
        shell.ran.append(shlex.join(["fedrec", *argv]))
        assert rc == status and must_say in err, \
            f"{where}: `fedrec {shlex.join(argv)}` exited {rc} (expected {status}):\n{err[-2000:]}"
        if redirect is not None:
            Path(redirect).write_text(out, encoding="utf-8")


def public_names(tree: ast.Module) -> dict[str, set[str]]:
    """Top-level names a module (or excerpt) defines, each with the members of a class."""
    names: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            members |= {n.target.id for n in node.body
                        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
            names[node.name] = members
        elif isinstance(node, ast.FunctionDef):
            names[node.name] = set()
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    names[target.id] = set()
    return names


def check_excerpt(block: Block, path: str) -> None:
    """Everything the excerpt defines is defined so in ``path`` (a file or a package)."""
    source = REPO / path
    files = sorted(source.glob("*.py")) if source.is_dir() else [source]
    assert files and all(f.is_file() for f in files), f"the excerpt's source {path} is missing"
    real: dict[str, set[str]] = {}
    for file in files:
        real.update(public_names(ast.parse(file.read_text(encoding="utf-8"))))
    excerpt = ast.parse(block.text)
    for node in excerpt.body:  # what it imports exists where it says
        if isinstance(node, ast.ImportFrom) and node.module:
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"{node.module} has no {alias.name}"
    for name, members in public_names(excerpt).items():
        assert name in real, f"{name} is not defined in {path}"
        assert members <= real[name], f"{name} in {path} lacks {sorted(members - real[name])}"


def check_calls(block: Block) -> None:
    """Compile a Python block that is not run, and bind each ``fedrec.NAME(...)`` call in it to
    the signature of ``fedrec.NAME``."""
    import fedrec

    tree = ast.parse(compile(block.text, "<block>", "exec", ast.PyCF_ONLY_AST))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "fedrec"):
            target = getattr(fedrec, node.func.attr)
            bound = inspect.signature(target).bind(
                *node.args, **{k.arg: k.value for k in node.keywords})
            # fedrec.run(..., **run_options): each a RunOptions field
            for name in bound.arguments.get("run_options", {}):
                if name not in {f.name for f in dataclasses.fields(fedrec.RunOptions)}:
                    raise TypeError(f"{node.func.attr}() got an unexpected keyword argument "
                                    f"'{name}' (not a RunOptions field)")


def run_page(page: str, text: str) -> Shell:
    """Every block of ``page`` (its markdown ``text``) in the current directory."""
    shell = Shell()
    for block in blocks(text):
        where = f"{page}:{block.line}"
        kind, spec = block.marker or ("", "")
        if block.lang == "bash":
            for line_no, line in logical_lines(block):
                run_command(shell, f"{page}:{line_no}", line, block)
        elif block.lang == "python" and kind == "excerpt of":
            check_excerpt(block, spec)
        elif block.lang == "python" and kind == "covered by":
            covered_tests(spec)
            check_calls(block)
        elif block.lang == "python":
            exec(compile(block.text, where, "exec"), {"__name__": "__docs__"})
    return shell


# The files the tutorials call the reader's own, written small (20 users, 30 items).
def _ratings(path: Path, header: str, sep: str = ",") -> None:
    rng = np.random.default_rng(1)
    rows = [sep.join(str(x) for x in (f"u{u}", f"m{i}", *([rng.integers(1, 6)] if
                                       header.count(sep) == 3 else []), 1000 + 7 * u + k))
            for u in range(20) for k, i in enumerate(rng.choice(30, 12, replace=False))]
    path.write_text("\n".join([header, *rows]) + "\n")


def _graph(root: Path, nodes: int = 400) -> None:
    """Two classes, features that hint at them; Feras's default sampler roots 300 walks."""
    rng = np.random.default_rng(1)
    labels = np.repeat([0, 1], nodes // 2)
    root.mkdir()
    np.save(root / "features.npy", rng.normal(labels[:, None], 1.0, (nodes, 8)))
    edges = {(u, int(v)) for u in range(nodes) for v in rng.choice(nodes, 3) if u != v}
    (root / "edges.csv").write_text("".join(f"{u},{v}\n" for u, v in sorted(edges)))
    (root / "labels.csv").write_text("".join(f"{c}\n" for c in labels))


USER_FILES: dict[str, Callable[[Path], None]] = {
    "my-ratings.csv": lambda p: _ratings(p, "user,item,rating,timestamp"),
    "my.csv": lambda p: _ratings(p, "user,item,rating,timestamp"),
    "stars.csv": lambda p: _ratings(p, "user,item,stars,timestamp"),
    "clicks.tsv": lambda p: _ratings(p, "uid\tsong\ttimestamp", "\t"),
    "my_graph": _graph,
}


def _same_runs(pattern: str, count: int) -> Callable[[Path], None]:
    """A page's claim that its ``count`` runs matching ``pattern`` end with the same metrics."""

    def check(cwd: Path) -> None:
        found = sorted(cwd.glob(f"{pattern}/results.json"))
        assert len(found) == count, found
        finals = [json.loads(f.read_text())["final"] for f in found]
        assert all(f == finals[0] for f in finals), finals

    return check


#: What a page says its commands show, checked on what they wrote.
CLAIMS: dict[str, Callable[[Path], None]] = {
    # "the same result": the client secret makes a run repeatable
    "docs/how-to/client-secrets.md": _same_runs("runs/fedgnn-[ab]", 2),
    # ML-100K as a catalogue dataset and as a user file of u.data with u1.test: the same run
    "docs/tutorials/own-data.md": _same_runs("runs/pmf-*", 2),
}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_root: Path) -> Iterator[Path]:
    """A fresh working directory, with $FEDREC_DATA absolute (CI gives it relative)."""
    if not (data_root / "ml-100k" / "u.data").is_file():
        pytest.skip(f"ML-100K is not staged under {data_root}")
    environ = dict(os.environ)  # a page's export lines change it
    monkeypatch.setenv("FEDREC_DATA", str(data_root))
    monkeypatch.delenv("FEDREC_CLIENT_SECRET", raising=False)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    os.environ.clear()
    os.environ.update(environ)


@pytest.mark.parametrize("page", code_pages())
def test_the_page_s_code_runs(page: str, workdir: Path) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    for name, write in USER_FILES.items():
        if name in text:
            write(workdir / name)
    run_page(page, text)
    if page in CLAIMS:
        CLAIMS[page](workdir)


@pytest.mark.parametrize("page", nav_pages())
def test_no_command_outside_a_fenced_block(page: str) -> None:
    """An indented code block is not run by this test: commands go in fenced blocks."""
    text = (REPO / page).read_text(encoding="utf-8")
    inside, stray = False, []
    for k, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.strip()) or line.strip() == "```":
            inside = not inside
        elif not inside and re.match(r"^( {4,}|\t)(\$ )?(fedrec|python3?|pip) ", line):
            stray.append(f"{page}:{k}: {line.strip()}")
    assert not stray, "\n".join(stray)


def test_ci_runs_the_readme_test_command() -> None:
    """The README's test command is skipped here because .ci/run runs it verbatim."""
    readme = blocks((REPO / "README.md").read_text(encoding="utf-8"))
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line for b in readme if b.lang == "bash" for _, line in logical_lines(b)]
    assert any("pytest" in line and line in ci.splitlines() for line in lines)


@pytest.mark.parametrize(("snippet", "message"), [
    ("```bash\nfedrec run pmf --dataset ml-100k --no-such-flag\n```",
     "exited 2 (expected 0)"),
    ("```bash\nfedrec results runs/ --plots curves.png\n```", "exited 2 (expected 0)"),
    ("```bash\nfedrec deploy fcf --dataset ml-100k --set rounds=2\n```",
     "mark its block '<!-- docs-test: covered by"),
    ("<!-- docs-test: covered by tests/engines/test_flower_deploy.py::test_gone -->\n"
     "```bash\nfedrec deploy fcf --dataset ml-100k\n```", "which does not exist"),
    ("```bash\ncurl -O https://example.org/data.csv\n```", "does not know how to run curl"),
    ("<!-- docs-test: covered by tests/engines/test_flower_deploy.py::"
     "test_fcf_deployment_equals_simulator -->\n"
     "```python\nimport fedrec\nfedrec.run('fcf', 'ml-100k', engines='flower')\n```",
     "unexpected keyword argument 'engines'"),
    ("<!-- docs-test: excerpt of src/fedrec/algorithms/methods/fedavg_gcn/server.py -->\n"
     "```python\nclass FedAvgGCNServer:\n    def run_rounds(self): ...\n```",
     "lacks ['run_rounds']"),
])
def test_a_broken_snippet_fails(snippet: str, message: str, workdir: Path) -> None:
    """What the test exists for: a doc that gains a command the CLI refuses fails it."""
    with pytest.raises((AssertionError, TypeError), match=re.escape(message)):
        run_page("page.md", snippet)


def test_a_page_s_marker_applies_to_the_next_block_only() -> None:
    text = ("<!-- docs-test: excerpt of x.py -->\n\n```python\na = 1\n```\n\ntext\n"
            "```python\nb = 2\n```\n")
    assert [b.marker for b in blocks(text)] == [("excerpt of", "x.py"), None]
    assert [b.line for b in blocks(text)] == [4, 9]


def test_the_pages_are_the_nav_s_and_every_page_with_code() -> None:
    pages = code_pages()
    assert {"README.md", "docs/get-started/first-run.md", "docs/tutorials/own-data.md",
            "docs/flower.md", "docs/how-to/resume.md", "docs/privacy.md"} <= set(pages)
    assert all((REPO / p).is_file() for p in pages)
