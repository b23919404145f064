"""PTF-FedRec's options (:mod:`fedrec.algorithms.methods.ptf_fedrec`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.methods.ptf_fedrec.upload_dp import UPLOAD_DP, check_upload_dp
from fedrec.algorithms.ncf_common import NCFClientConfig
from fedrec.attacks.poisoning import PoisoningOptions
from fedrec.config import check_choice, check_range, option
from fedrec.errors import ConfigError

DEFENSES = ("none", "ldp", "sampling", "sampling+swapping")
DISPERSALS = ("mixed", "no-hard", "no-confident", "random")
#: The server's defenses against malicious clients' predictions (:mod:`.robust`).
SCORE_DEFENSES = ("none", "item_trimmed")


@dataclass
class PTFFedRecConfig(NCFClientConfig, PoisoningOptions):
    """Defaults follow the authors' code (hi-weiyuan/PTF-FedRec README: "gives the main
    results"). A poisoning experiment's options
    (:class:`~fedrec.attacks.poisoning.PoisoningOptions`; ``poisoning_scale`` is not read:
    a prediction is a score in [0, 1], :mod:`fedrec.attacks.poisoning.predictions`) and the
    server's defense against them, ``score_defense`` (:mod:`.robust`): ``defense`` is the
    upload's privacy defense, not a robust aggregation (the server sums no update)."""

    rounds: int = option(20)
    eval_every: int = option(5)
    # The server's (hidden) model.
    server_model: str = option("ngcf", "ngcf | lightgcn (LightGCN uses len(server_layers) "
                                       "layers)")
    server_dim: int = option(32, "server model's embedding size")
    server_layers: tuple[int, ...] = option((32, 16), "server model's layer sizes")
    server_lr: float = option(0.001, "server Adam learning rate")
    server_batch: int = option(1024, "server training rows per step")
    server_epochs: int = option(2, "server epochs per round on the round's uploads (BCE summed, "
                                   "soft labels)")
    mess_dropout: float = option(0.1, "NGCF message dropout")
    # Dispersal: what the server sends back to each client.
    alpha: int = option(30, "items sent back per client (paper: 50 best on ML-100K/Steam)")
    mu: float = option(0.5, "share of confident items (the rest are hard items)")
    # no-hard / no-confident / random are the paper's Table VII ablations "-hard",
    # "-confidence", "-confidence -hard": they replace the hard / confident / both parts by items
    # drawn uniformly from those the client did not upload this round (mu 1 or 0 instead make
    # all alpha items confident, or all hard).
    dispersal: str = option("mixed", "mixed (the method) | no-hard | no-confident | random "
                                     "(the paper's Table VII ablations)")
    # Upload privacy.
    defense: str = option("sampling+swapping", "none | ldp | sampling | sampling+swapping")
    swap_rate: float = option(0.1, "lambda: share of the uploaded positives whose scores "
                                    "are swapped with non-positives")
    beta_range: tuple[float, ...] = option((0.1, 1.0), "share of positives uploaded, drawn per "
                                                       "client and round")
    gamma_range: tuple[float, ...] = option((1.0, 4.0), "negatives per uploaded positive, drawn "
                                                        "per client and round")
    ldp_scale: float = option(0.1, "Laplace scale on scores (defense: ldp)")
    # The formal mechanism (ptf_fedrec.upload_dp): user-level DP against the server.
    upload_dp: str = option("none", "none | gaussian: each upload is the client model's scores "
                                    "on upload_items random catalogue items plus Gaussian "
                                    "noise, user-level (epsilon, delta)-DP against the server "
                                    "(needs defense none)")
    upload_items: int = option(100, "upload_dp: items per upload (m), drawn uniformly from the "
                                    "catalogue")
    upload_noise: float = option(0.0, "upload_dp: noise multiplier z, sigma = z sqrt(m) (0: "
                                      "solved from target_epsilon)")
    target_epsilon: float = option(0.0, "upload_dp: user-level epsilon over the run's uploads "
                                        "against the server; solves upload_noise")
    dp_delta: float = option(1e-5, "upload_dp: delta of every epsilon reported")
    # Malicious clients (fedrec.attacks.poisoning): what the server does with their scores.
    score_defense: str = option("none", "none | item_trimmed: per item, the server drops the "
                                        "round's uploaded scores among its score_trim highest "
                                        "and lowest before training (against malicious "
                                        "clients)")
    score_trim: float = option(0.1, "item_trimmed: the fraction of an item's uploaded scores "
                                    "dropped at each end, in [0, 0.49]")
    attack: bool = option(True, "run the top-guess attack on uploads (metrics only)")
    attack_k: str = option("ratio", "ratio: k = n_up / (1 + num_negatives) | oracle: the true "
                                    "number of positives")
    attack_truth: str = option("interactions", "interactions: score guesses against all the "
                                               "client's positives (the paper's goal) | "
                                               "uploaded: only the uploaded ones")
    eval_clients: bool = option(True, "also evaluate every client's NeuMF (client_Recall@K, "
                                      "...)")
    chunk_samples: int = option(262_144, "padded training rows per vectorised group of clients "
                                         "(memory)")

    def validate(self) -> None:
        super().validate()
        check_choice("server_model", self.server_model, ("ngcf", "lightgcn"))
        check_choice("defense", self.defense, DEFENSES)
        check_choice("dispersal", self.dispersal, DISPERSALS)
        check_choice("score_defense", self.score_defense, SCORE_DEFENSES)
        check_range("score_trim", self.score_trim, 0.0, 0.49)
        if self.poisoning != "none" and not self.eval_clients:
            raise ConfigError("poisoning needs eval_clients true: the targets' exposure is "
                              "measured by the clients' own models")
        check_choice("attack_k", self.attack_k, ("ratio", "oracle"))
        check_choice("attack_truth", self.attack_truth, ("interactions", "uploaded"))
        for name in ("server_dim", "server_batch", "server_epochs", "chunk_samples"):
            check_range(name, getattr(self, name), 1)
        check_range("alpha", self.alpha, 0)
        check_range("server_lr", self.server_lr, 0.0, low_open=True)
        check_range("mu", self.mu, 0.0, 1.0)
        check_range("swap_rate", self.swap_rate, 0.0, 1.0)
        check_range("mess_dropout", self.mess_dropout, 0.0, 0.99)
        check_range("ldp_scale", self.ldp_scale, 0.0)
        check_choice("upload_dp", self.upload_dp, UPLOAD_DP)
        check_range("upload_items", self.upload_items, 1)
        check_range("upload_noise", self.upload_noise, 0.0)
        check_range("target_epsilon", self.target_epsilon, 0.0)
        check_upload_dp(self)
        if not self.server_layers or any(x < 1 for x in self.server_layers):
            raise ConfigError("server_layers must be a non-empty list of positive sizes")
        for name, lo in (("beta_range", 0.0), ("gamma_range", 0.0)):
            r = getattr(self, name)
            if len(r) != 2 or not lo < r[0] <= r[1]:
                raise ConfigError(f"{name} must be [low, high] with 0 < low <= high, got {r}")
        if self.beta_range[1] > 1.0:
            raise ConfigError(f"beta_range must lie in (0, 1], got {self.beta_range}")

