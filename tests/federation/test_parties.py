"""A job's declared parties drive the simulator: ids that are not user ids, roles from the
declaration (not from the id's type), services beside them, and the classic construction."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.algorithms.base import FederatedJob, FederatedTrainer, ServerLogic
from fedrec.config import RunConfig
from fedrec.errors import ConfigError
from fedrec.federation import THIRD_PARTY, PartyContext, PartyLogic, Routed
from fedrec.federation.message import CLIENT
from fedrec.federation.runtime import InProcessRuntime, Party, declare_parties


class Host(PartyLogic):
    def handle(self, step, ctx: PartyContext, payload):
        if step == "report":  # to the third party, never through the server
            return Routed({THIRD_PARTY: {"host": ctx.party, "size": len(ctx.data)}})
        return {"sum": float(np.sum(ctx.data)), "draw": float(ctx.rng().random())}


class Counter(PartyLogic):
    def handle(self, step, ctx: PartyContext, payload):
        ctx.state.setdefault("seen", []).extend(m.sender for m in ctx.inbox)
        return {"seen": list(ctx.state["seen"])}


class Server(ServerLogic):
    def __init__(self) -> None:
        self.rounds: list[dict] = []

    def run_round(self, rt, rnd):
        cohort = rt.sample_clients(2)
        sums = rt.broadcast("sum", cohort, {})
        rt.broadcast("report", cohort, {})
        seen = rt.call("count", {THIRD_PARTY: {}})[THIRD_PARTY]["seen"]
        self.rounds.append({"cohort": cohort, "sums": sums, "seen": seen})
        return {"clients": float(len(sums))}

    def evaluate(self, rt, split="test"):
        return {}

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


def _job() -> tuple[FederatedJob, Server]:
    host, server = Host(), Server()
    data = {"host-a": np.ones(3), "host-b": np.arange(4.0), "host-c": np.zeros(1)}
    parties = [Party(pid, CLIENT, host, d) for pid, d in data.items()]
    parties.append(Party(THIRD_PARTY, THIRD_PARTY, Counter(), None))
    return FederatedJob(server, parties=parties), server


def test_a_job_with_named_hosts_runs_in_the_simulator() -> None:
    job, server = _job()
    assert job.client_ids == ["host-a", "host-b", "host-c"]
    assert job.service_roles == [THIRD_PARTY]
    trainer = FederatedTrainer(job, RunConfig(rounds=3, seed=4), "cpu")
    assert trainer.runtime.client_ids == job.client_ids
    for rnd in (1, 2, 3):
        assert trainer.train_round(rnd) == {"clients": 2.0}
    cohorts = [r["cohort"] for r in server.rounds]
    assert all(len(c) == 2 and set(c) <= set(job.client_ids) for c in cohorts)
    assert len({tuple(c) for c in cohorts}) > 1  # sampled, not always the same two
    for r in server.rounds:
        assert {h: s["sum"] for h, s in r["sums"].items()} == {
            h: float(np.sum(dict((p.id, p.data) for p in job.parties)[h])) for h in r["cohort"]}
    # The third party received each round's reports straight from the hosts.
    assert server.rounds[-1]["seen"] == [h for r in server.rounds for h in r["cohort"]]
    # Roles come from the declaration: host -> server is "up", host -> third party too.
    rows = trainer.ledger.by_step()
    assert rows["sum (client->server)"]["messages"] == 6
    assert rows["report (client->third_party)"]["messages"] == 6
    assert trainer.ledger.totals()["messages_up"] == 12
    # Each host's private draws are keyed by its own id's secret: no two alike.
    draws = [s["draw"] for r in server.rounds for s in r["sums"].values()]
    assert len(set(draws)) == len(draws)


def test_named_clients_drop_out_like_user_clients() -> None:
    host = Host()
    parties = [Party(f"host-{i}", CLIENT, host, np.ones(1)) for i in range(200)]
    rt = InProcessRuntime(parties=parties, seed=1, dropout=0.5)
    rt.begin_round(1)
    answered = rt.broadcast("sum", rt.client_ids, {})
    assert 60 < len(answered) < 140 and set(answered) <= set(rt.client_ids)


def test_declare_parties_gives_one_client_per_entry_then_the_services() -> None:
    host, counter = Host(), Counter()
    job = FederatedJob(Server(), parties=declare_parties({3: "c", 1: "a", 2: "b"}, host,
                                                         {THIRD_PARTY: (counter, 7)}))
    assert [(p.id, p.role, p.data) for p in job.parties] == [
        (1, CLIENT, "a"), (2, CLIENT, "b"), (3, CLIENT, "c"), (THIRD_PARTY, THIRD_PARTY, 7)]
    assert all(p.logic is host for p in job.parties[:3]) and job.parties[3].logic is counter
    declared, _ = _job()
    assert declared.client_data == {p.id: p.data for p in declared.parties[:3]}
    assert declared.services == {THIRD_PARTY: (declared.parties[3].logic, None)}


def test_bad_declarations_are_config_errors() -> None:
    host = Host()
    with pytest.raises(ConfigError, match="two parties have the id 'h'"):
        FederatedJob(Server(), parties=[Party("h", CLIENT, host), Party("h", CLIENT, host)])
    with pytest.raises(ConfigError, match="different logic"):
        FederatedJob(Server(), parties=[Party("a", CLIENT, host), Party("b", CLIENT, Host())])
    with pytest.raises(ConfigError, match="named after its role"):
        FederatedJob(Server(), parties=[Party("matcher", THIRD_PARTY, Counter())])
    with pytest.raises(TypeError):  # one way to declare parties: parties=
        FederatedJob(Server(), host, {0: 1})  # type: ignore[misc]
    with pytest.raises(ConfigError, match="no client logic"):
        declare_parties({0: 1}, None)
    rt = InProcessRuntime(parties=[Party("a", CLIENT, host, np.ones(1))])
    with pytest.raises(ConfigError, match="unknown party 'b'"):
        rt.broadcast("sum", ["b"], {})


def test_co_located_parties() -> None:
    """A party co-located with a client (``host``) is a party of its own in the simulator and no
    stand-alone service: a deployment runs it on its host's node. Its host must be a client of
    the job, and a role is co-located throughout or not at all."""
    host, app = Host(), Counter()
    clients = [Party("a", CLIENT, host, np.ones(1)), Party("b", CLIENT, host, np.ones(2))]
    apps = [Party(f"app/{c.id}", "app", app, None, host=c.id) for c in clients]
    job = FederatedJob(Server(), parties=[*clients, *apps, Party(THIRD_PARTY, THIRD_PARTY, app)])
    assert job.service_roles == [THIRD_PARTY] and job.client_ids == ["a", "b"]
    with pytest.raises(ConfigError, match="not a client of the job"):
        FederatedJob(Server(), parties=[*clients, Party("app/x", "app", app, host="x")])
    with pytest.raises(ConfigError, match="some not"):
        FederatedJob(Server(), parties=[*clients, apps[0], Party("app/c", "app", app)])
    with pytest.raises(ConfigError, match="not a client of the job"):
        FederatedJob(Server(), parties=[Party("c", CLIENT, host, host="c")])
