"""Party secrets (fedrec.federation.secrets): derivation, the CSPRNG, and that server-side code
cannot reach them (the server-playing replay is tests/attacks/test_seed_replay.py)."""

from __future__ import annotations

import io
import json
import pickle

import numpy as np
import pytest
import torch

from fedrec.algorithms.base import FederatedTrainer
from fedrec.algorithms.methods.fedgnn import FedGNNConfig, build_fedgnn_job
from fedrec.config import build_config
from fedrec.engines.common import slice_users
from fedrec.errors import ConfigError
from fedrec.federation import encode
from fedrec.federation.secrets import ClientSecrets, KeyedCSPRNG, PartySecret

ROOT = bytes(range(32))
CPU = torch.device("cpu")


def test_a_service_root_derives_no_client_secret():
    root = ClientSecrets(ROOT)
    service = root.for_service("third_party")
    assert service.given and service.root_bytes() != ROOT
    assert service.party(3) != root.party(3)
    assert root.for_service("server").party("server") != service.party("server")


def test_party_secrets_are_keyed_by_root_and_party():
    a, b = ClientSecrets(ROOT), ClientSecrets(ROOT)
    assert a.party(3) == b.party(3)
    assert a.party(3) != a.party(4)
    assert a.party(3) != ClientSecrets(bytes(32)).party(3)
    assert a.role("client") != a.party("client")  # a role's secret is no party's
    assert a.party(3).seed(1, "x") == b.party(3).seed(1, "x") != a.party(3).seed(2, "x")
    assert 0 <= a.party(3).seed() < 2**63
    assert "PartySecret(<hidden>)" == repr(a.party(3))
    assert ROOT.hex() not in repr(a)


def test_fresh_roots_differ_and_say_so():
    x, y = ClientSecrets(), ClientSecrets()
    assert not x.given and ClientSecrets(ROOT).given
    assert x.root_bytes() != y.root_bytes()


@pytest.mark.parametrize("text", ["zz" * 32, "ab" * 31, "ab" * 33])
def test_bad_client_secret_is_a_config_error(text):
    with pytest.raises(ConfigError):
        ClientSecrets.from_hex(text)


def test_keyed_csprng_is_deterministic_and_keyed():
    s = PartySecret(ROOT)
    r1, r2 = s.csprng("k"), s.csprng("k")
    assert [r1.getrandbits(1000) for _ in range(3)] == [r2.getrandbits(1000) for _ in range(3)]
    assert s.csprng("k").getrandbits(256) != s.csprng("other").getrandbits(256)
    bits = [KeyedCSPRNG(bytes([i]) * 32).getrandbits(13) for i in range(200)]
    assert max(bits) < 2**13 and max(bits) >= 2**12  # k bits exactly, top bit reached
    u = np.array([s.csprng("u").random() for _ in range(1)] + [r1.random() for _ in range(2000)])
    assert 0.45 < u.mean() < 0.55 and u.min() >= 0 and u.max() < 1
    with pytest.raises(TypeError):
        r1.seed(0)


def _fedgnn_trainer(ml100k, root: bytes | None):
    cfg = build_config(FedGNNConfig, "fedgnn", "ml-100k",
                       overrides={"rounds": 1, "pseudo_items": 50, "neighbours": 3,
                                  "expand_after": 0, "clients_per_round": 16})
    job = build_fedgnn_job(cfg, slice_users(ml100k, 40), CPU)
    return FederatedTrainer(job, cfg, CPU, ClientSecrets(root) if root else None)


def _uploads(trainer) -> dict:
    seen: dict = {}
    trainer.runtime.observers.append(
        lambda m: seen.setdefault((m.sender, m.step), encode(m.payload)))
    trainer.train_round(1)
    return seen


def test_same_secret_same_draws_fresh_secret_other_draws(ml100k):
    a = _uploads(_fedgnn_trainer(ml100k, ROOT))
    b = _uploads(_fedgnn_trainer(ml100k, ROOT))
    c = _uploads(_fedgnn_trainer(ml100k, None))
    assert a == b
    train = [k for k in a if k[1] == "train" and isinstance(k[0], int)]  # clients' uploads
    assert train and all(a[k] != c[k] for k in train)


def test_server_side_cannot_reach_the_secrets(ml100k):
    """By construction: the secrets live in a name-mangled attribute of the simulator, reached
    only by its context builder; no public attribute of the runtime, nothing of the server's
    state and no message carries the root or any party's key."""
    trainer = _fedgnn_trainer(ml100k, ROOT)
    wire = b"".join(_uploads(trainer).values())
    secrets = ClientSecrets(ROOT)
    third = secrets.for_service("third_party")
    keys = [ROOT, third.root_bytes(), third.party("third_party")._key]
    keys += [secrets.party(p)._key for p in trainer.runtime.client_ids]
    keys += [secrets.party(p).key_bytes() for p in trainer.runtime.client_ids]
    server_state = io.BytesIO()
    torch.save(trainer.job.server.state_dict(), server_state)
    report = json.dumps(trainer.privacy_report(), default=str).encode()
    for blob in (wire, server_state.getvalue(), report, pickle.dumps(trainer.job.server)):
        assert not any(k in blob for k in keys)
    public = {k: v for k, v in vars(trainer.runtime).items()
              if not k.startswith("_") and k != "server_secret"}
    assert not any(isinstance(v, ClientSecrets | PartySecret) for v in public.values())
    # The server's own secret is none of the others'.
    assert trainer.runtime.server_secret._key not in keys
    # The orchestrator holds no reference to the runtime's secrets either.
    assert not any(isinstance(v, ClientSecrets | PartySecret)
                   for v in vars(trainer.job.server).values())


def test_checkpoint_keeps_the_root_and_refuses_another(ml100k):
    trainer = _fedgnn_trainer(ml100k, None)  # fresh entropy: resumed from the checkpoint's
    trainer.train_round(1)
    state = trainer.state_dict()
    again = _fedgnn_trainer(ml100k, None)
    again.load_state_dict(state)
    assert again.runtime.state_dict()["client_secret"] == state["runtime"]["client_secret"]
    assert not again.reproducible()
    other = _fedgnn_trainer(ml100k, bytes(32))
    with pytest.raises(ConfigError, match="client secret"):
        other.load_state_dict(state)
