"""Fetching and checking dataset files.

Every dataset has a manifest (``fedrec/data/checksums/<name>.json``: the files, with the sha256
and size of the verified reference copies; a few files only have a git blob id or md5) and a list
of sources (direct file URLs, a zip archive, or a PyPI wheel that carries the files).

:func:`ensure_files` makes the files a loader needs present: it returns at once when they are;
otherwise it downloads them (``urllib``, a ``tqdm`` progress bar, into a temporary file that is
renamed into place only after its checksum matched) or, offline or with ``download=False``,
raises a :class:`DataError` saying which files to put into which directory.

ML-100K: GroupLens is tried first; if it cannot be reached, the ``recbole==1.2.1`` wheel is
fetched from PyPI (``pip download`` or the PyPI JSON API), ``recbole/dataset_example/ml-100k/
ml-100k.{inter,user,item}`` are extracted into ``<dir>/recbole/`` and checked, and ``u.data`` and
``u.user`` are rebuilt from them (they are byte-identical to GroupLens's, which is verified).
``u.item`` and the ``u1..u5`` splits cannot be rebuilt; the ML-100K loader then reads the item
genres from the RecBole file and uses a seeded random 80/20 split.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

from fedrec.data.catalog import get_spec
from fedrec.data.paths import dataset_dir
from fedrec.errors import DataError

GROUPLENS = "https://files.grouplens.org/datasets/movielens"
LIGHTGCN_RAW = "https://raw.githubusercontent.com/gusye1234/LightGCN-PyTorch/master/data"
PLANETOID_RAW = "https://github.com/kimiyoung/planetoid/raw/master/data"
MGCNN_RAW = "https://github.com/fmonti/mgcnn/raw/master/Data"
GNNBENCH_RAW = "https://github.com/shchur/gnn-benchmark/raw/master/data/npz"
RECBOLE_WHEEL = ("recbole", "1.2.1")
RECBOLE_WHEEL_SHA256 = "9c9948202011f37eb0a7c6768129313f00d6403ad221ec940d5e2d5d5f33a407"
TIMEOUT_S = 30.0

Status = Literal["ok", "missing", "mismatch", "unverified"]


@dataclass(frozen=True)
class FileEntry:
    """One file of a dataset, relative to its directory, with whatever checksums are known."""

    path: str
    sha256: str | None = None
    size: int | None = None
    git_blob: str | None = None
    md5: str | None = None
    note: str | None = None

    @property
    def has_checksum(self) -> bool:
        return bool(self.sha256 or self.git_blob or self.md5)


@dataclass(frozen=True)
class Source:
    """Where files come from. ``kind``: ``"files"`` (``members`` maps a file to its URL),
    ``"zip"`` (``members`` maps a file to its member name in the archive at ``url``) or
    ``"wheel"`` (a PyPI wheel ``url`` = ``"package==version"``, members inside it)."""

    kind: Literal["files", "zip", "wheel"]
    label: str
    members: dict[str, str]
    url: str | None = None
    manual: str = ""

    def provides(self, files: Iterable[str]) -> bool:
        return all(f in self.members for f in files)


# --------------------------------------------------------------------------------- manifests


@cache
def manifest(name: str) -> dict[str, FileEntry]:
    """``{relative path: FileEntry}`` of every file known for dataset ``name``."""
    get_spec(name)
    text = resources.files("fedrec.data").joinpath("checksums", f"{name}.json").read_text()
    files = json.loads(text)["files"]
    return {p: FileEntry(path=p, **entry) for p, entry in files.items()}


def sources(name: str) -> list[Source]:
    """Download sources of ``name``, in the order they are tried."""
    spec = get_spec(name)
    files = list(manifest(name))
    if name == "ml-100k":
        grouplens = [f for f in files if not f.startswith(("recbole/", "mgcnn/"))]
        recbole = [f for f in files if f.startswith("recbole/")]
        wheel_dir = "recbole/dataset_example/ml-100k"
        return [
            Source("zip", "GroupLens ml-100k.zip", {f: f"ml-100k/{f}" for f in grouplens},
                   url=f"{GROUPLENS}/ml-100k.zip"),
            Source("wheel", "RecBole 1.2.1 wheel from PyPI",
                   {f: f"{wheel_dir}/{Path(f).name}" for f in recbole},
                   url="{}=={}".format(*RECBOLE_WHEEL)),
            Source("files", "mgcnn repository",
                   {"mgcnn/split_1.mat": f"{MGCNN_RAW}/movielens/split_1.mat"}),
        ]  # fmt: skip
    if name in ("ml-1m", "ml-10m"):
        folder = {"ml-1m": "ml-1m", "ml-10m": "ml-10M100K"}[name]
        return [Source("zip", f"GroupLens {name}.zip", {f: f"{folder}/{f}" for f in files},
                       url=f"{GROUPLENS}/{name}.zip")]  # fmt: skip
    if name in ("douban", "flixster", "yahoo_music"):
        return [Source("files", "mgcnn repository", {f: f"{MGCNN_RAW}/{name}/{f}" for f in files})]
    if name in ("gowalla", "yelp2018", "amazon-book"):
        return [Source("files", "LightGCN-PyTorch repository",
                       {f: f"{LIGHTGCN_RAW}/{name}/{f}" for f in files})]  # fmt: skip
    if name in ("cora", "citeseer", "pubmed"):
        return [Source("files", "Planetoid repository", {f: f"{PLANETOID_RAW}/{f}" for f in files})]
    if name.endswith("-gnnbench"):
        return [
            Source("files", "gnn-benchmark repository", {f: f"{GNNBENCH_RAW}/{f}" for f in files})
        ]
    if name == "steam-200k":
        manual = (
            f"download steam-video-games.zip from {spec.url} (Kaggle login needed) and extract "
            "steam-200k.csv"
        )
    else:  # GraphSAINT data are shared through Google Drive folders
        manual = f"download the {name} folder linked from {spec.url} (Google Drive)"
    return [Source("files", "manual download", {}, manual=manual)]


# --------------------------------------------------------------------------------- checking


def file_digest(path: Path, algorithm: str = "sha256") -> str:
    """Hex digest of a file (``algorithm``: ``sha256``, ``md5`` or ``git_blob``)."""
    if algorithm == "git_blob":
        h = hashlib.sha1(usedforsecurity=False)
        h.update(f"blob {path.stat().st_size}\0".encode())
    else:
        h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_file(path: Path, entry: FileEntry) -> Status:
    """``ok``/``mismatch``/``missing``, or ``unverified`` when no checksum is known."""
    if not path.is_file():
        return "missing"
    if entry.size is not None and path.stat().st_size != entry.size:
        return "mismatch"
    for algo in ("sha256", "git_blob", "md5"):
        expected = getattr(entry, algo)
        if expected:
            return "ok" if file_digest(path, algo) == expected else "mismatch"
    return "unverified"


def verify(name: str, data_dir: str | os.PathLike[str] | None = None) -> dict[str, Status]:
    """Per-file report ``{relative path: ok | missing | mismatch | unverified}`` for ``name``."""
    root = dataset_dir(get_spec(name).dirname, data_dir)
    return {rel: check_file(root / rel, entry) for rel, entry in manifest(name).items()}


# --------------------------------------------------------------------------------- messages


def missing_files_message(
    name: str, root: Path, missing: Sequence[str], any_of: bool = False, why: str = ""
) -> str:
    """One line: which files are missing, where they go, and where to get them."""
    joiner = " or " if any_of else ", "
    head = f"{name}: missing {joiner.join(missing)} in {root}"
    hints = []
    for src in sources(name):
        wanted = [f for f in missing if f in src.members]
        if src.manual and not src.members:
            hints.append(src.manual)
        elif not wanted:
            continue
        elif src.kind == "files":
            hints.append("; ".join(f"download {src.members[f]} to {root / f}" for f in wanted))
        elif src.kind == "zip":
            hints.append(f"download {src.url} and extract {', '.join(wanted)} into {root}")
        else:
            members = ", ".join(src.members[f] for f in wanted)
            hints.append(f"or take {members} from the PyPI wheel {src.url} into {root / 'recbole'}")
    text = head
    if why:
        text += f" ({why})"
    if hints:
        text += "; " + "; ".join(hints)
    if not why:
        text += f" (or call fedrec.data.download.ensure_files({name!r}) to download)"
    return " ".join(text.split())


# --------------------------------------------------------------------------------- downloading


def _urlopen(url: str, timeout: float = TIMEOUT_S):
    request = urllib.request.Request(url, headers={"User-Agent": "fedrec-data/0.1"})
    return urllib.request.urlopen(request, timeout=timeout)


class SourceUnavailable(DataError):
    """A source could not be reached (network error, offline); :func:`ensure_files` then tries
    the next source."""


def download_file(url: str, dest: Path, entry: FileEntry | None = None) -> Path:
    """Download ``url`` to ``dest`` via a temporary file, check it against ``entry``, rename it.

    A checksum mismatch raises :class:`DataError` (nothing is kept); a network error raises
    :class:`SourceUnavailable` (also a :class:`DataError`).
    """
    from tqdm import tqdm

    try:
        resp = _urlopen(url)
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        raise SourceUnavailable(f"{url}: {getattr(exc, 'reason', exc)}") from exc
    with resp:
        total = int(resp.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=dest.name, disable=None) as bar:

            def chunks() -> Iterable[bytes]:
                while True:
                    try:
                        chunk = resp.read(1 << 16)
                    except (OSError, ValueError) as exc:
                        raise SourceUnavailable(f"{url}: transfer failed ({exc})") from exc
                    if not chunk:
                        return
                    bar.update(len(chunk))
                    yield chunk

            _atomic_write(dest, chunks(), entry, url)
    return dest


def _atomic_write(dest: Path, chunks: Iterable[bytes], entry: FileEntry | None, label: str) -> None:
    """Write ``chunks`` to a temporary file next to ``dest``, check it, rename it into place."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        if entry is not None and check_file(tmp, entry) == "mismatch":
            raise DataError(
                f"{dest.name} from {label}: checksum does not match the manifest (file not saved)"
            )
        os.chmod(tmp, 0o644)  # mkstemp creates 0600 files
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def extract_members(
    archive: Path,
    members: dict[str, str],
    root: Path,
    entries: dict[str, FileEntry],
    label: str,
    required: Iterable[str] | None = None,
) -> None:
    """Extract ``{relative path: member name}`` from a zip/wheel into ``root``, checking each.

    A member absent from the archive is an error if it is ``required`` (default: all of them).
    """
    required = set(members if required is None else required)
    try:
        with zipfile.ZipFile(archive) as zf:
            names = set(zf.namelist())
            for rel, member in members.items():
                if member not in names:
                    if rel not in required:
                        continue
                    raise DataError(f"{label}: archive {archive.name} has no member {member}")
                with zf.open(member) as src:
                    chunks = iter(lambda src=src: src.read(1 << 20), b"")
                    _atomic_write(root / rel, chunks, entries.get(rel), label)
    except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile, zlib.error) as exc:
        raise DataError(f"{label}: {archive} is not a valid zip archive ({exc})") from exc


def fetch_pypi_wheel(package: str, version: str, dest_dir: Path) -> Path:
    """Fetch ``package==version``'s wheel into ``dest_dir``: ``pip download`` first, then the
    PyPI JSON API (the wheel URL and its sha256 come from the JSON)."""
    errors = []
    cmd = [sys.executable, "-m", "pip", "download", f"{package}=={version}", "--no-deps",
           "--only-binary=:all:", "-q", "-d", str(dest_dir)]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        wheels = sorted(dest_dir.glob(f"{package}-{version}-*.whl"))
        if proc.returncode == 0 and wheels:
            return wheels[0]
        last = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or ["no wheel"]
        errors.append(f"pip download: {last[0]}")
    except (OSError, subprocess.SubprocessError) as exc:
        errors.append(f"pip download: {exc}")
    for api in (f"https://pypi.org/pypi/{package}/{version}/json",
                f"https://pypi.org/pypi/{package}/json"):  # fmt: skip
        try:
            with _urlopen(api) as resp:
                info = json.load(resp)
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
            errors.append(f"{api}: {getattr(exc, 'reason', exc)}")
            continue
        files = info.get("urls") if api.endswith(f"{version}/json") else None
        files = files or info.get("releases", {}).get(version, [])
        wheels = [f for f in files if f.get("filename", "").endswith("-py3-none-any.whl")]
        if not wheels:
            errors.append(f"{api}: no pure-Python wheel for {version}")
            continue
        w = wheels[0]
        entry = FileEntry(w["filename"], sha256=w.get("digests", {}).get("sha256"))
        return download_file(w["url"], dest_dir / w["filename"], entry)
    raise SourceUnavailable("; ".join(str(e) for e in errors))


def _rebuild_grouplens_from_recbole(root: Path) -> list[str]:
    """Write ``u.data``/``u.user`` from the RecBole files when the result is byte-identical to
    GroupLens's (checked against the manifest); returns the files written."""
    entries = manifest("ml-100k")
    written = []
    for rel, src, convert in (
        ("u.data", "recbole/ml-100k.inter", lambda body: body),
        ("u.user", "recbole/ml-100k.user", lambda body: body.replace(b"\t", b"|")),
    ):
        if (root / rel).is_file() or not (root / src).is_file():
            continue
        data = (root / src).read_bytes()
        body = convert(data.split(b"\n", 1)[1] if b"\n" in data else b"")
        try:
            _atomic_write(root / rel, [body], entries[rel], f"{rel} rebuilt from {src}")
        except DataError:
            continue  # not identical: the loader reads the RecBole file directly instead
        written.append(rel)
    return written


def _fetch(src: Source, files: Sequence[str], root: Path, name: str) -> None:
    entries = manifest(name)
    if src.kind == "files":
        for rel in files:
            if not (root / rel).is_file():
                download_file(src.members[rel], root / rel, entries.get(rel))
        return
    with tempfile.TemporaryDirectory(prefix="fedrec-dl-") as tmp:
        tmp_dir = Path(tmp)
        if src.kind == "zip":
            archive = download_file(str(src.url), tmp_dir / Path(str(src.url)).name)
        else:
            package, version = str(src.url).split("==")
            archive = fetch_pypi_wheel(package, version, tmp_dir)
            if (package, version) == RECBOLE_WHEEL and file_digest(archive) != RECBOLE_WHEEL_SHA256:
                raise DataError(f"{archive.name}: sha256 differs from the known PyPI wheel")
        # an archive at hand: take every member of it that is missing, not only the needed ones
        wanted = {rel: m for rel, m in src.members.items() if not (root / rel).is_file()}
        extract_members(archive, wanted, root, entries, src.label, required=files)
    if src.kind == "wheel" and name == "ml-100k":
        rebuilt = _rebuild_grouplens_from_recbole(root)
        _say(f"ml-100k: extracted {', '.join(wanted)} from the {src.label}; rebuilt "
             f"{', '.join(rebuilt) or 'nothing'} (verified identical to GroupLens)")  # fmt: skip


def _say(message: str) -> None:
    print(f"fedrec.data: {message}", file=sys.stderr)


def ensure_files(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    download: bool = True,
    files: Sequence[str] | None = None,
) -> Path:
    """Make sure the files ``name``'s loader needs are in its directory; return the directory.

    ``files`` (relative paths) overrides the default requirement (any complete file set of the
    dataset's spec). Present files are not re-hashed (use :func:`verify`). Missing files are
    downloaded when ``download`` is true, trying each source in turn; a checksum mismatch, or no
    source succeeding (offline, no public URL), raises a one-line :class:`DataError` naming the
    files and the directory to put them in.
    """
    spec = get_spec(name)
    root = dataset_dir(spec.dirname, data_dir)
    wanted_sets = [tuple(files)] if files else list(spec.file_sets())

    def missing_of(fs: Sequence[str]) -> list[str]:
        return [f for f in fs if not (root / f).is_file()]

    if any(not missing_of(fs) for fs in wanted_sets):
        return root
    first_missing = missing_of(wanted_sets[0])
    any_of = len(wanted_sets) > 1
    shown = [missing_of(fs)[0] for fs in wanted_sets] if any_of else first_missing
    if not download:
        raise DataError(missing_files_message(name, root, shown, any_of=any_of))
    failures = []
    for src in sources(name):
        for fs in wanted_sets:
            need = missing_of(fs)
            if not need or not src.members or not src.provides(need):
                continue
            try:
                _say(f"{name}: fetching {', '.join(need)} from the {src.label}")
                _fetch(src, need, root, name)
            except SourceUnavailable as exc:
                failures.append(f"{src.label} unreachable ({exc})")
                _say(f"{name}: {src.label} unreachable; trying the next source")
                break
            if not missing_of(fs):
                return root
    why = "; ".join(failures) if failures else "no automatic download source"
    raise DataError(missing_files_message(name, root, shown, any_of=any_of, why=why))
