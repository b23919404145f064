"""What a row of the privacy grid (:mod:`fedrec.reproduce.privacy`) says, read from its runs'
``results.json``: its epsilons against the server and the released model, the attack F1 its
run measured on the server's inbox, and a one-run audit of its release mechanism. The grid's
README.md and its page per method and mode (:mod:`fedrec.reproduce.privacy_modes`) both read
rows through these, so they say the same."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def privacy_figures(runs: list[dict[str, Any]]) -> tuple[str, str, str]:
    """Server-side and released-model epsilon and the noise multiplier of a setting's runs."""
    if not runs:
        return "–", "–", "–"
    p = runs[0].get("privacy") or {}
    if p.get("upload_dp") not in (None, "none"):  # a method's local mechanism: one threat
        eps = p.get("epsilon")
        return ("–" if eps is None else f"{eps:.3g}", "–" if eps is None else f"{eps:.3g}",
                f"{p.get('noise_multiplier', 0.0):.3g}")
    if p.get("dp") in (None, "none"):
        return "none", "none", "–"
    z = p.get("noise_multiplier") or 0.0
    if z <= 0:
        return "none (no noise)", "none (no noise)", "0"
    server = p.get("epsilon_server_rdp")
    released = p.get("epsilon_released_model")
    return ("none (trusted server)" if server is None else f"{server:.3g}",
            "–" if released is None else f"{released:.3g}", f"{z:.3g}")


#: Each DP row's one-run audit (:func:`fedrec.privacy.audit.audit_aggregate`): this many
#: canaries in a space of this many dimensions, 95% confidence. The other included canaries'
#: directions add about sqrt(canaries / 2 / dim) of a canary's own signal to its score, which
#: caps what the audit can certify even without noise; at this dimension the no-noise rows'
#: audits (``audits.json``) reach the most its guesses can (``fedrec.privacy.audit``).
AUDIT_CANARIES = 1000
AUDIT_DIM = 4000
#: The audits already made, by the parameters they replay (a report-only pass reruns none).
AUDITS_NAME = "audits.json"


def audit_parameters(run: dict[str, Any]) -> dict[str, Any] | None:
    """The release mechanism of a row's run as the audit replays it, or None where the run has
    no formal mechanism: the DP aggregate (``dp`` distributed or central) at the run's noise
    multiplier, clip, releases of the most-participating client and survivor threshold; or
    PTF-FedRec's Gaussian on each upload, which is the Gaussian mechanism composed over the
    client's uploads (``central`` at clip 1: the audit is scale-free). The audit attacks this
    mechanism with canary clients sending the strongest clipped signal, not the trained model:
    a lower bound from it below the accounted epsilon says the noise and the accounting of
    what the server decodes agree, not that the model leaks less."""
    p = run.get("privacy") or {}
    z = p.get("noise_multiplier")
    # A run without noise reports no participations: the grid samples every client every round.
    rounds = p.get("participations_max") or (run.get("config") or {}).get("rounds")
    if z is None or not rounds:
        return None
    if p.get("upload_dp") not in (None, "none"):
        return {"mechanism": "central", "noise_multiplier": float(z), "clip": 1.0,
                "rounds": int(rounds), "threshold": 1.0}
    if p.get("dp") not in ("distributed", "central"):
        return None
    threshold = float(run["config"].get("secagg_threshold", 1.0)) if p["dp"] == "distributed" \
        else 1.0
    return {"mechanism": p["dp"], "noise_multiplier": float(z), "clip": float(p["dp_clip"]),
            "rounds": int(rounds), "threshold": threshold}


def audit_key(params: dict[str, Any]) -> str:
    """The key of an audit in ``audits.json``: the mechanism it replays and the canaries'
    number and dimension (an audit made with others is made again)."""
    return json.dumps({**params, "canaries": AUDIT_CANARIES, "dim": AUDIT_DIM}, sort_keys=True)


def audit_row(runs: list[dict[str, Any]], audits: dict[str, dict[str, float]]) -> str:
    """The audited lower bound on epsilon of a row's mechanism (its first seed's), from
    ``audits`` or made and added there. With no noise (the ``no-noise`` row) the audit runs
    the noiseless mechanism: its bound is the most these canaries can certify."""
    params = audit_parameters(runs[0]) if runs else None
    if params is None:
        return "–"
    key = audit_key(params)
    if key not in audits:
        from fedrec.privacy.audit import audit_aggregate

        noiseless = params["noise_multiplier"] <= 0
        res = audit_aggregate(
            params["mechanism"], canaries=AUDIT_CANARIES, rounds=params["rounds"],
            dim=AUDIT_DIM, clip=params["clip"],
            noise_multiplier=1.0 if noiseless else params["noise_multiplier"],
            threshold=params["threshold"], remove_noise=noiseless,
            rng=np.random.default_rng(zlib.crc32(key.encode())))
        audits[key] = {"epsilon_lower_bound": res.epsilon_lower_bound,
                       "accounted_epsilon": None if noiseless else res.accounted_epsilon}
    return f"{audits[key]['epsilon_lower_bound']:.3g}"


def measured_attack(run: dict[str, Any]) -> dict[str, Any] | None:
    """The part of a run's privacy report that holds the attack it measured on the server's
    inbox (``measured_attack``, ``measured_attack_f1``, maybe ``measured_chance_f1``), in any
    part of the report; None where it measured none."""
    p = run.get("privacy") or {}
    for part in (p, *(v for v in p.values() if isinstance(v, dict))):
        if part.get("measured_attack_f1") is not None:
            return part
    return None


def attack_f1(runs: list[dict[str, Any]]) -> str:
    """The F1 of the attack a row's run measured on what the server received
    (:func:`measured_attack`: PTF-FedRec's cross-upload attack in every mode; FedGNN's
    rated-item attack with ``measure_leakage``), with its chance F1 where the report gives one;
    ``–`` where the run measured none (the aggregate attacks are in results/privacy-attacks)."""
    part = measured_attack(runs[0]) if runs else None
    if part is None:
        return "–"
    chance = part.get("measured_chance_f1")
    return (f"{part['measured_attack_f1']:.3f}"
            + ("" if chance is None else f" (chance {chance:.3f})"))


def committed_runs(folders: Sequence[str], dataset: str) -> list[dict[str, Any]]:
    """The ``results.json`` of each committed run folder of ``folders`` (``{dataset}`` filled
    in) that exists: a method's runs made outside the grid (the paper's mechanism, its own
    settings without noise)."""
    paths = [Path(f.format(dataset=dataset)) / "results.json" for f in folders]
    return [json.loads(p.read_text()) for p in paths if p.is_file()]
