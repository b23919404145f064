"""FCF's server (:mod:`fedrec.algorithms.methods.fcf`): the item factors, one Adam step per round
on the
cohort's summed gradient."""

from __future__ import annotations

import copy
from typing import Any

import torch

from fedrec.algorithms.base import RATING_EVALUATION, ServerLogic
from fedrec.algorithms.methods.fcf.client import upload_size
from fedrec.algorithms.methods.fcf.config import FCFConfig
from fedrec.algorithms.methods.fcf.steps import EVALUATE, TRAIN
from fedrec.algorithms.mf_common import eval_request, reduce_client_metrics
from fedrec.core.codec import Payload
from fedrec.core.rng import torch_generator
from fedrec.federation.aggregation import robust_sum, sum_rows
from fedrec.federation.dp_sum import DPAggregate, dp_on, evaluation_sender, expected_mean
from fedrec.federation.runtime import Runtime, cohort_size
from fedrec.federation.secure_sum import (
    receives,
    run_secure_sum,
    secure_sum_report,
    secure_sum_request,
)
from fedrec.models.mf import init_factors
from fedrec.privacy.report import NoGuarantee, PrivacyReport


class FCFServer(ServerLogic):
    """Holds the item factors; sums client gradients; one Adam step per round."""

    def __init__(
        self, cfg: FCFConfig, num_items: int, explicit: bool, device: torch.device,
        num_clients: int,
    ) -> None:
        self.cfg = cfg
        self.explicit = explicit
        gen = torch_generator(cfg.seed, "init-items")
        self.q = init_factors(num_items, cfg.dim, gen).to(device).requires_grad_(True)
        self.b_i = torch.zeros(num_items, device=device, requires_grad=True)
        params = [self.q, self.b_i] if explicit else [self.q]
        self.opt = torch.optim.Adam(params, lr=cfg.lr)
        self.dp = (DPAggregate(cfg, num_clients, upload_size(num_items, cfg.dim, explicit))
                   if dp_on(cfg) else None)
        # Krum's f against the planned cohort, before the first round.
        cfg.check_defense(secure=False, cohort=cohort_size(cfg.clients_per_round, num_clients))

    def _broadcast(self) -> Payload:
        msg: Payload = {"item_factors": self.q.detach()}
        if self.explicit:
            msg["item_bias"] = self.b_i.detach()
        return msg

    def run_round(self, rt: Runtime, rnd: int) -> dict[str, float]:
        if self.dp is not None:
            return self._dp_round(rt)
        selected = rt.cohort(self.cfg.clients_per_round)
        if self.cfg.secure_aggregation:
            return self._secure_round(rt, selected)
        # Diverged training shows as non-finite updates, which the runtime rejects.
        replies = rt.updates(rt.broadcast(TRAIN, selected, self._broadcast()), TRAIN,
                             "if updates diverge, lower lr_user or lr")
        self.opt.zero_grad()
        if self.cfg.defense == "none":
            dev = self.q.device

            def gathered(name: str) -> torch.Tensor:
                return torch.cat([torch.as_tensor(r[name], device=dev)
                                  for r in replies.values()])

            items = gathered("items")
            # The cohort's gradient: each upload's rows summed into the rows of its item ids.
            self.q.grad = sum_rows(items, gathered("grad_q"), out=torch.zeros_like(self.q))
            if self.explicit:
                self.b_i.grad = sum_rows(items, gathered("grad_b"),
                                         out=torch.zeros_like(self.b_i))
        else:
            self._defended_gradient(list(replies.values()))
        self.opt.step()
        return {"clients": len(replies)}

    def _defended_gradient(self, uploads: list[Payload]) -> None:
        """The cohort's gradient as the run's defense estimates the benign sum
        (:func:`~fedrec.federation.aggregation.robust_sum`): one decision per client over its
        factor and bias rows together (``[rows, dim + 1]`` for explicit ratings)."""
        dev = self.q.device
        ids = [torch.as_tensor(u["items"], device=dev) for u in uploads]
        rows = [torch.as_tensor(u["grad_q"], device=dev) for u in uploads]
        if self.explicit:
            rows = [torch.cat([r, torch.as_tensor(u["grad_b"], device=dev)[:, None]], 1)
                    for r, u in zip(rows, uploads, strict=True)]
        total = robust_sum(self.cfg.defense, ids, rows, self.q.shape[0],
                           self.cfg.defense_params())
        self.q.grad = total[:, : self.q.shape[1]].contiguous()
        if self.explicit:
            self.b_i.grad = total[:, -1].contiguous()

    def _secure_round(self, rt: Runtime, selected: list[int]) -> dict[str, float]:
        """One round with secure aggregation: the server sees keys, ciphertexts, masked vectors
        and the cohort's summed gradient, never one client's gradient."""
        cfg = self.cfg
        num_items, dim = self.q.shape
        size = num_items * (dim + (1 if self.explicit else 0))
        sa_cfg = cfg.sum_config(size, len(selected))
        adverts = rt.broadcast(TRAIN, selected,
                               dict(self._broadcast(), **secure_sum_request(len(selected))))
        result = run_secure_sum(rt, adverts, sa_cfg, step=TRAIN)
        total = torch.from_numpy(result.total).to(self.q.device, self.q.dtype)
        self._step(total)
        return {"clients": len(result.survivors), "dropped_after_keys": len(result.dropped)}

    def _dp_round(self, rt: Runtime) -> dict[str, float]:
        """One round of the DP aggregate (:mod:`fedrec.federation.dp_sum`): the server sees the
        noised sum of the Poisson cohort's clipped dense gradients, and divides it by the public
        expected cohort size."""
        assert self.dp is not None
        released = self.dp.round(rt, TRAIN, self._broadcast())
        self._step(torch.from_numpy(expected_mean(released.total, self.dp.plan)).to(
            self.q.device, self.q.dtype))
        return {"clients": float(len(released.survivors))}

    def _step(self, total: torch.Tensor) -> None:
        """One Adam step on a flat gradient laid out as :meth:`FCFClient.dense_upload`."""
        num_items, dim = self.q.shape
        self.opt.zero_grad()
        self.q.grad = total[: num_items * dim].reshape(num_items, dim).clone()
        if self.explicit:
            self.b_i.grad = total[num_items * dim:].clone()
        self.opt.step()

    def evaluate(self, rt: Runtime, split: str = "test") -> dict[str, float]:
        replies = rt.broadcast(EVALUATE, rt.client_ids,
                               eval_request(self._broadcast(), split, self.exposure_targets),
                               sender=evaluation_sender(self.cfg))
        return reduce_client_metrics(replies.values(), self.explicit)

    def receives(self) -> dict[str, str]:
        vector = "the gradients of the item factors (and biases) from its ratings"
        if self.dp is not None:
            return self.dp.receives(TRAIN, vector)
        if self.cfg.secure_aggregation:
            return {**receives(TRAIN, vector), EVALUATE: RATING_EVALUATION}
        return {TRAIN: "each cohort client's rated item ids and the gradients of their factors "
                       "(and biases), in clear", EVALUATE: RATING_EVALUATION}

    def privacy(self) -> PrivacyReport:
        """No differential privacy: with secure aggregation the server learns only each
        cohort's sum (no formal bound on what a sum reveals); without it, every upload. With
        ``dp``, the DP aggregate's user-level report."""
        if self.dp is not None:
            return self.dp.report()
        if self.cfg.secure_aggregation:
            return secure_sum_report(
                self.cfg, "the server learns each round's summed (dense) item gradient of the "
                          "surviving clients and who survived; no individual upload")
        return PrivacyReport((NoGuarantee(
            protection="none: user factors stay on the device, item gradients are sent in clear",
            leakage="each upload names the items the client rated (explicit) or touched "
                    "(implicit), and carries unnoised gradients",
            details={"secure_aggregation": False}),))

    def state_dict(self) -> dict[str, Any]:
        return {"q": self.q.detach().clone(), "b_i": self.b_i.detach().clone(),
                "opt": copy.deepcopy(self.opt.state_dict()),
                "dp": self.dp.state_dict() if self.dp is not None else None}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        with torch.no_grad():
            self.q.copy_(state["q"])
            self.b_i.copy_(state["b_i"])
        self.opt.load_state_dict(state["opt"])
        if self.dp is not None:
            self.dp.load_state_dict(state["dp"])
