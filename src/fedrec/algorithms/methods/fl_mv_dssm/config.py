"""FL-MV-DSSM's options (:mod:`fedrec.algorithms.methods.fl_mv_dssm`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.multiview_common import MultiViewSplitConfig
from fedrec.config import check_choice, check_range, option
from fedrec.data.multiview import VIEW_NAMES
from fedrec.errors import ConfigError
from fedrec.federation.dp_sum import DPOptionsBeside
from fedrec.federation.secure_sum import SecureSumOptions


@dataclass
class FLMVDSSMConfig(MultiViewSplitConfig, DPOptionsBeside, SecureSumOptions):
    """The paper's settings (Section V-A): client SGD 0.2, batch 20, 100 clients per round,
    100 rounds; Table I's towers; Gaussian mechanism sigma 1 on the local aggregate (the
    paper's experiments). The server's Adam lr (the paper's 0.001) and ``gamma`` (the paper
    gives none) are chosen on validation (results/fl-mv-dssm-tuning); ``--preset paper`` sets
    0.001 and our earlier 10. The user-level DP aggregate's options
    (:class:`~fedrec.federation.dp_sum.DPOptionsBeside`: its noise multiplier is
    ``dp_noise_multiplier``, independent of the paper's ``noise_multiplier``) apply to the
    cross-device sum, whose unit is the device (all its views)."""

    rounds: int = option(100)
    eval_every: int = option(10)
    clients_per_round: int = option(100, "devices sampled per round (0 = every device)")
    views: tuple[str, ...] = option(VIEW_NAMES, "the user views each device runs, by name "
                                                "(demographics, svd); one view = FL-DSSM")
    widths: tuple[int, ...] = option((64, 32, 16), "Dense widths of every tower (Table I)")
    gamma: float = option(5.0, "softmax temperature over cosine relevance (eq. 5)")
    num_negatives: int = option(4, "N: random unclicked items per positive (eq. 5)")
    client_lr: float = option(0.2, "views' SGD learning rate")
    client_batch: int = option(20, "positives per local SGD step")
    local_epochs: int = option(1, "local epochs per round over the device's positives")
    server_lr: float = option(0.003, "server Adam learning rate on the mean update")
    aggregate_user_sub_model: bool = option(True, "true: FL-MV-DSSM (user sub-models "
                                                  "aggregated too) | false: SEMI-FL-MV-DSSM "
                                                  "(each view keeps its own)")
    view_sample_size: int = option(0, "|B|: views whose item update enters a device's local "
                                      "aggregate each round (0: all N)")
    clip: float = option(0.1, "C: L2 bound of each view's item-sub-model update")
    noise_multiplier: float = option(1.0, "sigma: the local aggregate's Gaussian noise is "
                                          "N(0, sigma^2 C^2) (0: no noise, no guarantee)")
    predict_noise: float = option(0.0, "Gaussian noise on each view's probabilities, in "
                                       "units of their L2 sensitivity sqrt(2) (0: none)")
    delta: float = option(1e-5, "delta of the reported (epsilon, delta)")
    topk: int = option(10, "K of Precision/Recall/NDCG@K")
    eval_devices: int = option(0, "devices evaluated: a sample of this many drawn once from "
                                  "the run's seed, the same at every evaluation (0: every "
                                  "device)")

    def validate(self) -> None:
        super().validate()
        if not self.views:
            raise ConfigError("views is empty: a device needs at least one view")
        for name in self.views:
            check_choice("views", name, VIEW_NAMES)
        if len(set(self.views)) != len(self.views):
            raise ConfigError(f"views names a view twice: {list(self.views)}")
        if not self.widths:
            raise ConfigError("widths is empty: a tower needs at least one layer")
        for w in self.widths:
            check_range("widths", w, 1)
        for name in ("num_negatives", "client_batch", "local_epochs", "topk"):
            check_range(name, getattr(self, name), 1)
        for name in ("gamma", "client_lr", "server_lr", "clip"):
            check_range(name, getattr(self, name), 0.0, low_open=True)
        check_range("noise_multiplier", self.noise_multiplier, 0.0)
        check_range("predict_noise", self.predict_noise, 0.0)
        check_range("delta", self.delta, 0.0, 1.0, low_open=True)
        check_range("view_sample_size", self.view_sample_size, 0)
        check_range("eval_devices", self.eval_devices, 0)
        if self.view_sample_size > len(self.views):
            raise ConfigError(f"view_sample_size (|B|) is {self.view_sample_size} but a device "
                              f"has {len(self.views)} views (N)")
        if self.dp != "none":
            check_dp_sum_switch(self.dp, self.dp_masking, self.secure_aggregation)

    @property
    def sampled_views(self) -> int:
        """|B|."""
        return self.view_sample_size or len(self.views)


def check_dp_sum_switch(dp: str, masking: bool, secure_aggregation: bool) -> None:
    """Under ``dp`` the cross-device sum is the DP aggregate's, masked exactly when
    ``dp=distributed`` with ``dp_masking``: ``secure_aggregation`` must say the same (a
    one-line :class:`ConfigError` otherwise), so that no setting is silently not applied."""
    masked = dp == "distributed" and masking
    if secure_aggregation != masked:
        how = ("masks the noised vectors (dp_masking)" if masked else
               "sums in clear" + (" (dp_masking=false)" if dp == "distributed" else
                                  " (the server adds the noise)"))
        raise ConfigError(f"dp={dp} {how}: set secure_aggregation="
                          f"{str(masked).lower()} to match")
