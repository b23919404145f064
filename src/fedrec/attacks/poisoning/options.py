"""The options of a poisoning experiment (:mod:`fedrec.attacks.poisoning`): which attack, how
many malicious clients and of which kind, which items they promote. A method's config inherits
them (:class:`PoisoningOptions`) when the method supports malicious clients."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.config import RunConfig, check_choice, check_range, option
from fedrec.errors import ConfigError

#: ``none``: every client is benign. Data poisoning (the malicious clients run the method's own
#: client code on a crafted profile): ``random`` (random filler items), ``popular``
#: (PipAttack-style popularity mimicry: the most popular items). Model poisoning (the malicious
#: clients send crafted updates instead of the method's): ``crafted`` (promote the targets for
#: users approximated by the popular items' factors, :mod:`.crafting`), ``untargeted`` (the
#: benign update negated and scaled, to lower everyone's accuracy).
ATTACKS = ("none", "random", "popular", "crafted", "untargeted")
#: The attacks that send what the method's own client code computes (on a crafted profile).
DATA_ATTACKS = ("random", "popular")
#: The attacks that send crafted updates (the method's adapter speaks its protocol).
MODEL_ATTACKS = ("crafted", "untargeted")
#: ``fake``: new users registered by the attacker (added to the population); ``takeover``:
#: existing users' devices taken over (the population is unchanged).
MALICIOUS_KINDS = ("fake", "takeover")


@dataclass
class PoisoningOptions(RunConfig):
    """The poisoning experiment's options (module docstring)."""

    poisoning: str = option("none", "none | random | popular (fake profiles, the method's "
                                    "own client code) | crafted | untargeted (crafted "
                                    "updates): the attack the malicious clients run")
    malicious_fraction: float = option(0.01, "malicious clients as a fraction of the benign "
                                             "users (0 to 0.5)")
    malicious_kind: str = option("fake", "fake: new users registered by the attacker | "
                                         "takeover: existing users' devices")
    poisoning_targets: int = option(1, "items the attack promotes (drawn among the less "
                                       "popular half of the catalogue)")
    poisoning_profile: int = option(0, "filler items of a fake profile (0: the median "
                                       "training profile size)")
    poisoning_scale: float = option(10.0, "crafted | untargeted: the L2 norm of a malicious "
                                          "update, in multiples of the median norm of the "
                                          "malicious clients' own benign updates")

    poisoning_clip: bool = option(True, "crafted | untargeted in a DP run: the malicious "
                                        "clients clip to dp_clip as the protocol asks (false: "
                                        "they skip it; nothing in the secure sum checks it)")

    def validate(self) -> None:
        super().validate()
        check_choice("poisoning", self.poisoning, ATTACKS)
        if not self.poisoning_clip and (self.poisoning not in MODEL_ATTACKS
                                        or getattr(self, "dp", "none") != "distributed"):
            raise ConfigError("poisoning_clip false needs a model attack (crafted, untargeted) "
                              "and dp=distributed: the DP aggregate's clip is the client-side "
                              "bound it skips")
        check_choice("malicious_kind", self.malicious_kind, MALICIOUS_KINDS)
        if not 0.0 <= self.malicious_fraction <= 0.5:
            raise ConfigError(f"malicious_fraction must be in [0, 0.5], got "
                              f"{self.malicious_fraction}")
        check_range("poisoning_targets", self.poisoning_targets, 1)
        check_range("poisoning_profile", self.poisoning_profile, 0)
        check_range("poisoning_scale", self.poisoning_scale, 0.0, low_open=True)


def poisoned(cfg: object) -> bool:
    """Whether a run is a poisoning experiment (an attack is set; with ``malicious_fraction`` 0
    it measures the targets' exposure without attackers, the baseline of the same targets)."""
    return isinstance(cfg, PoisoningOptions) and cfg.poisoning != "none"


def malicious_count(fraction: float, benign_users: int) -> int:
    """How many malicious clients ``fraction`` of ``benign_users`` is: at least one for any
    positive fraction (0.1% of ML-100K's 943 users is one attacker, not none)."""
    return 0 if fraction <= 0 else max(1, round(fraction * benign_users))
