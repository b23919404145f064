"""Fixtures for the data tests: where the staged (read-only) datasets are, and small helpers.

The staged files are never copied into the repository; corrupted variants are written to
``tmp_path`` and the untouched files are symlinked next to them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _data_root() -> Path:
    raw = Path(os.environ.get("FEDREC_DATA", "/work/shared/datasets")).expanduser()
    return (raw if raw.is_absolute() else REPO / raw).resolve()


@pytest.fixture(scope="session")
def data_root() -> Path:
    """Absolute path of the staged datasets ($FEDREC_DATA, default /work/shared/datasets)."""
    return _data_root()


def need(root: Path, *files: str) -> None:
    """Skip the calling test unless every staged file exists."""
    missing = [f for f in files if not (root / f).is_file()]
    if missing:
        pytest.skip(f"staged data file(s) not available: {', '.join(missing)} under {root}")


def mirror(src_dir: Path, dst_dir: Path, files: list[str] | None = None) -> Path:
    """Symlink ``files`` (default: every file, recursively) of ``src_dir`` into ``dst_dir``."""
    dst_dir.mkdir(parents=True, exist_ok=True)
    rels = (
        files
        if files is not None
        else [p.relative_to(src_dir).as_posix() for p in src_dir.rglob("*") if p.is_file()]
    )
    for rel in rels:
        target = dst_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(src_dir / rel)
    return dst_dir


def replace_file(path: Path, data: bytes) -> None:
    """Replace a (possibly symlinked) file of a mirrored directory by new content."""
    if path.is_symlink() or path.exists():
        path.unlink()
    path.write_bytes(data)


@pytest.fixture(name="need")
def _need_fixture():
    """The :func:`need` helper (fixtures avoid importing conftest as a module)."""
    return need


@pytest.fixture(name="mirror")
def _mirror_fixture():
    return mirror


@pytest.fixture(name="replace_file")
def _replace_file_fixture():
    return replace_file


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """The data tests never touch the network: only file:// URLs can be opened, and the PyPI
    wheel fallback fails as if offline (tests that need it substitute a local wheel)."""
    from fedrec.data import download

    real = download._urlopen

    def local_only(url: str, timeout: float = download.TIMEOUT_S):
        if not url.startswith("file://"):
            raise download.urllib.error.URLError("network disabled in tests")
        return real(url, timeout)

    def offline_wheel(package: str, version: str, dest_dir: Path) -> Path:
        raise download.SourceUnavailable("PyPI disabled in tests")

    monkeypatch.setattr(download, "_urlopen", local_only)
    monkeypatch.setattr(download, "fetch_pypi_wheel", offline_wheel)
