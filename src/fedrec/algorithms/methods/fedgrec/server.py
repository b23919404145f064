"""FedGRec's server (:mod:`fedrec.algorithms.methods.fedgrec`): e_t^0, the latent item tables and
the
item degrees; the warm-up, the rounds and the sums (secure or plain)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from fedrec.algorithms.base import RANKING_EVALUATION, ServerLogic
from fedrec.algorithms.methods.fedgrec.config import FedGRecConfig
from fedrec.algorithms.methods.fedgrec.defense import defended_sum
from fedrec.algorithms.methods.fedgrec.dp import DPBudget, DPLayout, dp_tables
from fedrec.algorithms.methods.fedgrec.steps import (
    EVALUATE,
    REQUEST_ROWS,
    TRAIN,
    TRAIN_ROWS,
    WARMUP_DEGREES,
    WARMUP_LATENT,
)
from fedrec.algorithms.mf_common import eval_request, reduce_client_metrics
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.federation.dp_sum import DPAggregate, dp_on, evaluation_sender, expected_mean
from fedrec.federation.message import PartyId
from fedrec.federation.runtime import Runtime, cohort_size
from fedrec.federation.secure_sum import (
    receives,
    secure_sum_report,
    secure_sum_request,
    sum_streamed,
)
from fedrec.privacy.report import NoGuarantee, PrivacyReport


class FedGRecServer(ServerLogic):
    """Holds e_t^0 (float32), the latent item tables e_t^1..e_t^K (float64 sums) and |N_t|
    (under ``dp``: the unnormalised latent sums ``A`` and the noised degree sum ``D``,
    :mod:`fedrec.algorithms.methods.fedgrec.dp`)."""

    def __init__(self, cfg: FedGRecConfig, num_items: int, device: torch.device,
                 num_clients: int = 0) -> None:
        """``num_clients``: how many clients the run has (public; needed under ``dp``)."""
        self.cfg = cfg
        self.num_items = num_items
        k, d = cfg.num_layers, cfg.dim
        # Shared initialisation from the public seed (LightGCN's N(0, 0.1^2)).
        gen = torch_generator(cfg.seed, "fedgrec-init-items")
        self.item_emb = (torch.randn(num_items, d, generator=gen) * 0.1).to(device)
        self.latent = torch.zeros(k, num_items, d, dtype=torch.float64, device=device)
        self.degrees = torch.zeros(num_items, dtype=torch.float64, device=device)
        self.warm = k == 0  # K = 0: no latent embeddings, no warm-up
        self.rows_downloaded = 0
        self.layout = DPLayout.of(cfg, num_items)
        self.dp = DPAggregate(cfg, num_clients, self.layout.size) if dp_on(cfg) else None
        if self.dp is not None:
            self.warm = True  # under dp the tables fill from the rounds (no warm-up)
        # Krum's f against the planned cohort, before the first round.
        cfg.check_defense(secure=cfg.secure_aggregation or self.dp is not None,
                          cohort=cohort_size(cfg.clients_per_round, num_clients))

    # -- what is sent -------------------------------------------------------------------------
    def tables(self) -> Payload:
        if self.dp is not None:
            return dp_tables(self.item_emb, self.latent, self.degrees, self.cfg.dp_degree)
        return {"item_emb": self.item_emb.float(), "latent": self.latent.float(),
                "degrees": self.degrees.float()}

    def sum_uploads(self, rt: Runtime, targets: list[PartyId],
                    send: Callable[[list[PartyId]], Mapping[PartyId, Payload]],
                    size: int, step: str) -> tuple[np.ndarray, int]:
        """The sum of the dense uploads of ``size`` floats that ``send(targets)`` returns (the
        replies to ``step``) and how many are in it: Bonawitz et al.'s secure sum over
        ``targets``, or the plain sum of the same fixed-point encodings, asked
        ``plain_sum_part`` clients at a time."""
        cfg = self.cfg
        sa = cfg.sum_config(size, len(targets))
        return sum_streamed(rt, targets, send, sa, secure=cfg.secure_aggregation, step=step,
                            part=cfg.plain_sum_part)

    # -- warm-up (Algorithm 1, lines 3-9) -----------------------------------------------------
    def chunks(self, rt: Runtime) -> list[list[PartyId]]:
        """Every client, in sums of at most ``clients_per_round`` clients (at least 2 each)."""
        ids = list(rt.client_ids)
        n = max(1, math.ceil(len(ids) / cohort_size(self.cfg.clients_per_round, len(ids))))
        if len(ids) >= 2:
            n = min(n, len(ids) // 2)
        return [list(part) for part in np.array_split(np.asarray(ids, dtype=object), n)]

    def warm_up(self, rt: Runtime) -> None:
        """|N_t| summed over every client, then the latent item tables layer by layer: pass
        ``k`` sums every client's e_u^{k-1} / sqrt(|N_u| |N_t|) into e_t^k."""
        n_items, d = self.num_items, self.cfg.dim
        degrees = np.zeros(n_items)
        for part in self.chunks(rt):
            request = secure_sum_request(len(part))
            total, _ = self.sum_uploads(
                rt, part, lambda to, r=request: rt.broadcast(WARMUP_DEGREES, to, r), n_items,
                WARMUP_DEGREES)
            degrees += np.rint(total / self.cfg.secagg_clip)  # counts arrive times the clip
        self.degrees = torch.from_numpy(degrees).to(self.degrees)
        for layer in range(1, self.cfg.num_layers + 1):
            total_layer = np.zeros(n_items * d)
            for part in self.chunks(rt):
                request = {**self.tables(), "layer": layer, **secure_sum_request(len(part))}
                total, _ = self.sum_uploads(
                    rt, part, lambda to, r=request: rt.broadcast(WARMUP_LATENT, to, r),
                    n_items * d, WARMUP_LATENT)
                total_layer += total
            self.latent[layer - 1] += torch.from_numpy(total_layer).reshape(n_items, d).to(
                self.latent)
        self.warm = True

    # -- a round ------------------------------------------------------------------------------
    def refresh_round(self, rnd: int) -> bool:
        """Whether round ``rnd``'s clients upload their latent contributions."""
        p = self.cfg.refresh_period
        return self.cfg.num_layers > 0 and p > 0 and (rnd - 1) % p == 0

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        if self.dp is not None:
            return self._dp_round(rt, rnd)
        if not self.warm:
            self.warm_up(rt)
        cfg, n_items, d, k = self.cfg, self.num_items, self.cfg.dim, self.cfg.num_layers
        selected = rt.cohort(cfg.clients_per_round)
        refresh = self.refresh_round(rnd)
        request = {"refresh": int(refresh), **secure_sum_request(len(selected))}
        full = {**self.tables(), **request} if cfg.download == "full" else None

        def send(targets: list[PartyId]) -> Mapping[PartyId, Payload]:
            if full is not None:
                return rt.broadcast(TRAIN, targets, full)
            wanted = rt.broadcast(REQUEST_ROWS, targets, {})
            requests = {}
            for c, msg in wanted.items():
                rows = torch.as_tensor(msg["rows"]).long()
                requests[c] = {"rows": rows, "item_emb": self.item_emb[rows].float(),
                               "latent": self.latent[:, rows].float(),
                               "degrees": self.degrees[rows].float(), **request}
                self.rows_downloaded += len(rows)
            return rt.call(TRAIN_ROWS, requests)

        size = 1 + n_items * (d + 1) + (k * n_items * d if refresh else 0)
        step_name = TRAIN if full is not None else TRAIN_ROWS
        if cfg.defense == "none":
            total, clients = self.sum_uploads(rt, selected, send, size, step_name)
        else:  # plain uploads only (FedGRecConfig.validate): each decoded on its own
            total, clients = defended_sum(
                rt, selected, send, cfg.sum_config(size, len(selected)), step=step_name,
                part=cfg.plain_sum_part, num_items=n_items, dim=d, defense=cfg.defense,
                params=cfg.defense_params())
        total_t = torch.from_numpy(total)
        loss = float(total_t[0]) / max(clients, 1)
        delta = total_t[1: 1 + n_items * d].reshape(n_items, d)
        trained = torch.from_numpy(np.rint(total[1 + n_items * d: 1 + n_items * (d + 1)]
                                           / cfg.secagg_clip))
        # e_t^0: server_lr times the mean update of the sampled clients that trained the row.
        step = cfg.server_lr * delta / trained.clamp(min=1)[:, None]
        self.item_emb += step.to(self.item_emb)
        if refresh:
            self.latent += total_t[1 + n_items * (d + 1):].reshape(k, n_items, d).to(self.latent)
        return {"clients": float(clients), "train_loss": loss, "refresh": float(refresh)}

    def _dp_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        """One round of the DP aggregate (:mod:`fedrec.algorithms.methods.fedgrec.dp`): the
        server sees the noised sum of the Poisson cohort's clipped vectors; ``e_t^0`` moves by
        ``server_lr`` times its block over the public expected cohort, the degree block (unless
        ``dp_degree`` is public) is added to ``D`` and, in a refresh round, the latent block
        (divided by its public weight) is added to ``A`` or, with ``dp_latent: estimate``,
        re-estimates it: ``A <- (1 - beta) A + beta S / q``."""
        assert self.dp is not None
        n, d, lay = self.num_items, self.cfg.dim, self.layout
        refresh = self.refresh_round(rnd)
        released = self.dp.round(rt, TRAIN, {**self.tables(), "refresh": int(refresh)})
        total, survivors = released.total, released.survivors
        mean = torch.from_numpy(expected_mean(total[: n * d], self.dp.plan)).reshape(n, d)
        self.item_emb += (self.cfg.server_lr * mean).to(self.item_emb)
        if lay.degrees is not None:  # none with a public degree
            self.degrees += torch.from_numpy(total[lay.degrees: lay.degrees + n]).to(
                self.degrees)
        if refresh and lay.latent is not None:
            latent = torch.from_numpy(total[lay.latent:] / DPBudget.of(self.cfg).latent_weight
                                      ).reshape(self.cfg.num_layers, n, d).to(self.latent)
            beta = self.cfg.dp_latent_decay
            if self.cfg.dp_latent == "estimate":  # from the round's whole contributions
                self.latent = (1 - beta) * self.latent + beta * latent / self.dp.plan.rate
            else:
                self.latent += latent
        return {"clients": float(len(survivors)), "refresh": float(refresh)}

    # -- evaluation, checkpoints, report ------------------------------------------------------
    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        request = eval_request(self.tables(), split, self.exposure_targets)
        replies = rt.broadcast(EVALUATE, rt.client_ids, request,
                               sender=evaluation_sender(self.cfg))
        return reduce_client_metrics(replies.values(), explicit=False)

    def state_dict(self) -> dict[str, Any]:
        state = {"item_emb": self.item_emb.clone(), "latent": self.latent.clone(),
                 "degrees": self.degrees.clone(), "warm": self.warm,
                 "rows_downloaded": self.rows_downloaded}
        if self.dp is not None:
            state["dp"] = self.dp.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.item_emb = state["item_emb"].clone().to(self.item_emb)
        self.latent = state["latent"].clone().to(self.latent)
        self.degrees = state["degrees"].clone().to(self.degrees)
        self.warm = bool(state["warm"])
        self.rows_downloaded = int(state["rows_downloaded"])
        if self.dp is not None:
            self.dp.load_state_dict(state["dp"])

    def receives(self) -> dict[str, str]:
        if self.dp is not None:
            return self.dp.receives(TRAIN, "its item-embedding updates, degree change and "
                                           "latent-embedding change as one vector")
        secure = self.cfg.secure_aggregation
        return {**receives(WARMUP_DEGREES, "the indicator of its rated items", secure),
                **receives(WARMUP_LATENT, "its initial latent-embedding contributions", secure),
                **receives(TRAIN, "its item-embedding updates and latent contributions",
                           secure),
                EVALUATE: RANKING_EVALUATION}

    def privacy(self) -> PrivacyReport:
        """No differential privacy. With secure aggregation the server learns sums only
        (degrees, each cohort's summed updates and latent contributions); per-row download
        tells it every sampled client's items (and sampled negatives). With ``dp``, the DP
        aggregate's user-level report."""
        cfg = self.cfg
        if self.dp is not None:
            return self.dp.report().with_details(releases=(
                "one per round: the noised sum of the Poisson cohort's clipped vectors "
                "[item-row updates | degree change | latent change] (no degree block with a "
                "public dp_degree, no latent block with dp_latent: none); no warm-up under dp. "
                "The "
                "degree and latent tables are sums of released sums (post-processing), so a "
                "latent contribution that persists in them is accounted in the rounds that "
                "carried it"))
        download = (
            "each client downloads the whole tables: the download reveals nothing"
            if cfg.download == "full" else
            "per-row download: the server learns, for every sampled client and round, the set "
            "of rows it reads, i.e. all its training items plus that round's sampled negatives "
            f"({self.rows_downloaded} rows so far)")
        if cfg.secure_aggregation:
            return secure_sum_report(
                cfg, of=", of dense uploads",
                leakage="the item degrees |N_t|, each warm-up chunk's and each cohort's summed "
                        "item updates, rows-trained counts, latent contributions and mean loss, "
                        "and who survived; " + download)
        return PrivacyReport((NoGuarantee(
            protection="none: every client's dense upload is sent in clear (fixed-point "
                       "encoded); e_u^0 and the latent user embeddings stay on the device",
            leakage="each upload shows the rows the client trained (its items and negatives), "
                    "its item updates and its latent contributions e_u^k / sqrt(|N_u| |N_t|); "
                    + download,
            details={"secure_aggregation": False}),))
