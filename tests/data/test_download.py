"""Manifests, verify(), ensure_files() with local file:// sources, offline errors and the
ML-100K RecBole-wheel fallback (with a locally built stand-in wheel: no network)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from fedrec.data import download, ensure_files, list_datasets, load_dataset, verify
from fedrec.data.download import FileEntry, Source, download_file, file_digest
from fedrec.errors import DataError

CORA = [f"ind.cora.{s}" for s in ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")]
RECBOLE = ["ml-100k.inter", "ml-100k.user", "ml-100k.item"]


def test_every_dataset_has_a_manifest_and_source() -> None:
    for spec in list_datasets():
        entries = download.manifest(spec.name)
        assert set(spec.files) <= set(entries), spec.name
        assert download.sources(spec.name)


def test_known_urls() -> None:
    assert (
        download.sources("ml-100k")[0].url
        == "https://files.grouplens.org/datasets/movielens/ml-100k.zip"
    )
    gow = download.sources("gowalla")[0].members["train.txt"]
    assert (
        gow
        == "https://raw.githubusercontent.com/gusye1234/LightGCN-PyTorch/master/data/gowalla/train.txt"
    )
    assert download.sources("cora")[0].members["ind.cora.x"] == (
        "https://github.com/kimiyoung/planetoid/raw/master/data/ind.cora.x"
    )
    assert (
        download.sources("douban")[0]
        .members["training_test_dataset.mat"]
        .startswith("https://github.com/fmonti/mgcnn/raw/master/Data/douban/")
    )


@pytest.mark.parametrize("name", ["cora", "ml-100k", "flixster", "gowalla"])
def test_verify_staged_ok(data_root: Path, need, name: str) -> None:
    entries = download.manifest(name)
    root = data_root / {"cora": "planetoid"}.get(name, name)
    need(root, *entries)
    report = verify(name, data_root)
    if name == "ml-100k":  # the staged u1.base is not GroupLens's file: no trusted checksum
        assert report.pop("u1.base") == "unverified"
        assert "NOT the GroupLens original" in download.manifest(name)["u1.base"].note
    assert set(report.values()) == {"ok"}


def test_verify_reports_missing_for_partial_datasets(data_root: Path, need) -> None:
    need(data_root / "amazon-book", "test.txt")
    report = verify("amazon-book", data_root)
    assert report["test.txt"] == "ok"
    if not (data_root / "amazon-book/train.txt").exists():
        assert report["train.txt"] == "missing"


def test_verify_tampered_copy(data_root: Path, tmp_path: Path, need, mirror, replace_file) -> None:
    need(data_root / "planetoid", *CORA)
    mirror(data_root / "planetoid", tmp_path / "planetoid", CORA)
    data = bytearray((data_root / "planetoid/ind.cora.y").read_bytes())
    data[-10] ^= 0xFF  # same size, one byte flipped
    replace_file(tmp_path / "planetoid/ind.cora.y", bytes(data))
    (tmp_path / "planetoid/ind.cora.tx").unlink()
    report = verify("cora", tmp_path)
    assert report["ind.cora.y"] == "mismatch" and report["ind.cora.tx"] == "missing"
    assert report["ind.cora.x"] == "ok"


def test_git_blob_checksum(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"hello\n")
    assert (
        file_digest(p, "git_blob") == "ce013625030ba8dba906f756967f9e9ca394464a"
    )  # git hash-object
    assert (
        download.check_file(p, FileEntry("f", git_blob="ce013625030ba8dba906f756967f9e9ca394464a"))
        == "ok"
    )
    assert download.check_file(p, FileEntry("f")) == "unverified"


def test_ensure_files_present_needs_no_network(data_root: Path, need) -> None:
    need(data_root / "gowalla", "train.txt", "test.txt")
    assert ensure_files("gowalla", data_root) == data_root / "gowalla"


def test_ensure_files_no_download_names_files(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        ensure_files("yelp2018", tmp_path, download=False)
    msg = str(err.value)
    assert msg.startswith(f"yelp2018: missing train.txt, test.txt in {tmp_path / 'yelp2018'}")
    assert "LightGCN-PyTorch/master/data/yelp2018/train.txt" in msg


def test_ensure_files_offline(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        ensure_files("cora", tmp_path)
    msg = str(err.value)
    assert "unreachable" in msg and str(tmp_path / "planetoid") in msg and "ind.cora.allx" in msg
    assert "\n" not in msg and not list((tmp_path / "planetoid").glob("*"))


def test_ensure_files_no_public_url(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"steam-200k: missing steam-200k\.csv .*kaggle"):
        ensure_files("steam-200k", tmp_path)


def test_download_file_checks_sha(data_root: Path, tmp_path: Path, need) -> None:
    need(data_root / "planetoid", "ind.cora.y")
    src = data_root / "planetoid/ind.cora.y"
    entry = download.manifest("cora")["ind.cora.y"]
    dest = download_file(src.as_uri(), tmp_path / "out" / "ind.cora.y", entry)
    assert file_digest(dest) == entry.sha256
    bad = FileEntry("ind.cora.y", sha256="0" * 64)
    with pytest.raises(DataError, match="checksum does not match"):
        download_file(src.as_uri(), tmp_path / "bad" / "ind.cora.y", bad)
    assert list((tmp_path / "bad").iterdir()) == []  # no partial or mismatched file left


def test_ensure_files_from_file_urls(data_root: Path, tmp_path: Path, need, monkeypatch) -> None:
    need(data_root / "planetoid", *CORA)
    members = {f: (data_root / "planetoid" / f).as_uri() for f in CORA}
    monkeypatch.setattr(
        download, "sources", lambda name: [Source("files", "local mirror", members)]
    )
    root = ensure_files("cora", tmp_path)
    assert set(verify("cora", tmp_path).values()) == {"ok"}
    assert load_dataset("cora", tmp_path).num_nodes == 2708 and root == tmp_path / "planetoid"


def test_ensure_files_from_zip(tmp_path: Path, monkeypatch) -> None:
    archive = tmp_path / "ml-1m.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ml-1m/ratings.dat", "1::1::5::978300760\n2::1::3::978300761\n")
        zf.writestr("ml-1m/movies.dat", "1::Toy Story (1995)::Animation\n")  # not the real file
    real = download.sources("ml-1m")[0]
    local = Source("zip", real.label, real.members, url=archive.as_uri())
    monkeypatch.setattr(download, "sources", lambda name: [local])
    with pytest.raises(DataError, match=r"movies\.dat from GroupLens ml-1m\.zip: checksum"):
        ensure_files("ml-1m", tmp_path / "data")
    with zipfile.ZipFile(archive, "w") as zf:  # only ratings.dat, which has no known checksum
        zf.writestr("ml-1m/ratings.dat", "1::1::5::978300760\n2::1::3::978300761\n")
    ensure_files("ml-1m", tmp_path / "data")
    assert verify("ml-1m", tmp_path / "data")["ratings.dat"] == "unverified"
    ds = load_dataset("ml-1m", tmp_path / "data", test_fraction=0.5)
    assert (ds.num_users, ds.num_items, len(ds.train), len(ds.test)) == (2, 1, 1, 1)


def test_corrupt_zip(tmp_path: Path, monkeypatch) -> None:
    archive = tmp_path / "ml-1m.zip"
    archive.write_bytes(b"PK\x03\x04 not really a zip")
    real = download.sources("ml-1m")[0]
    monkeypatch.setattr(
        download, "sources", lambda name: [Source("zip", "x", real.members, url=archive.as_uri())]
    )
    with pytest.raises(DataError, match="not a valid zip archive"):
        ensure_files("ml-1m", tmp_path / "data")


def _fake_wheel(data_root: Path, path: Path, tamper: bool = False) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for f in RECBOLE:
            data = (data_root / "ml-100k/recbole" / f).read_bytes()
            if tamper and f.endswith(".user"):
                data = data.replace(b"technician", b"technicianX", 1)
            zf.writestr(f"recbole/dataset_example/ml-100k/{f}", data)
        zf.writestr("recbole/__init__.py", "")
    return path


def test_ml100k_recbole_wheel_fallback(
    data_root: Path, tmp_path: Path, need, monkeypatch, capsys
) -> None:
    need(data_root / "ml-100k/recbole", *RECBOLE)
    wheel = _fake_wheel(data_root, tmp_path / "recbole-1.2.1-py3-none-any.whl")
    monkeypatch.setattr(download, "fetch_pypi_wheel", lambda package, version, dest_dir: wheel)
    monkeypatch.setattr(download, "RECBOLE_WHEEL_SHA256", file_digest(wheel))
    root = ensure_files("ml-100k", tmp_path / "data")  # GroupLens is "unreachable" (no network)
    err = capsys.readouterr().err
    assert "GroupLens ml-100k.zip unreachable" in err and "RecBole 1.2.1 wheel" in err
    report = verify("ml-100k", tmp_path / "data")
    assert {k: v for k, v in report.items() if v != "missing"} == {
        "recbole/ml-100k.inter": "ok", "recbole/ml-100k.user": "ok", "recbole/ml-100k.item": "ok",
        "u.data": "ok", "u.user": "ok",  # rebuilt byte-identical to GroupLens's files
    }  # fmt: skip
    ds = load_dataset("ml-100k", tmp_path / "data", val_fraction=0.0)  # the loader's own split
    assert (ds.num_users, ds.num_items, len(ds.train), len(ds.test)) == (943, 1682, 80_000, 20_000)
    assert ds.item_features.shape == (1682, 19) and "recbole/ml-100k.item" in ds.meta["source"]
    assert root == tmp_path / "data/ml-100k"


def test_ml100k_tampered_wheel_is_rejected(
    data_root: Path, tmp_path: Path, need, monkeypatch
) -> None:
    need(data_root / "ml-100k/recbole", *RECBOLE)
    wheel = _fake_wheel(data_root, tmp_path / "recbole-1.2.1-py3-none-any.whl", tamper=True)
    monkeypatch.setattr(download, "fetch_pypi_wheel", lambda package, version, dest_dir: wheel)
    monkeypatch.setattr(download, "RECBOLE_WHEEL_SHA256", file_digest(wheel))
    with pytest.raises(DataError, match=r"ml-100k\.user from .*checksum does not match"):
        ensure_files("ml-100k", tmp_path / "data")
    assert not (tmp_path / "data/ml-100k/recbole/ml-100k.user").exists()
