"""FedMF's options (:mod:`fedrec.algorithms.methods.fedmf`)."""

from __future__ import annotations

from dataclasses import dataclass

from fedrec.algorithms.item_gradient import ItemGradientConfig
from fedrec.config import check_choice, check_range, option
from fedrec.errors import ConfigError
from fedrec.privacy.paillier import DEFAULT_KEY_BITS

UPLOAD_MODES = ("full", "part")


@dataclass
class FedMFConfig(ItemGradientConfig):
    """FCF's options (``lr`` is the SGD step on the item table here) plus the encryption's."""

    # Cost on ML-100K at these defaults: ~11 CPU-minutes per round (~2 min per client to encrypt
    # 1682 x 9 values at 2048 bits), 7.75 MB up + 7.75 MB down per client per round; every
    # evaluation sends the encrypted table to all 943 clients (7.3 GB metered).
    rounds: int = option(20)
    clients_per_round: int = option(5, "Paillier is slow: each client encrypts num_items x "
                                       "(dim + 1) values")
    dim: int = option(8)
    # Stable on ML-100K: 0.05 up to ~20 clients per round, 0.02 up to 100, 0.002 with all.
    lr: float = option(0.05, "SGD step on the item table: V -= lr * (sum of the cohort's "
                             "gradients); lower it for bigger cohorts")
    key_bits: int = option(DEFAULT_KEY_BITS, "Paillier modulus n in bits; FedMF's released code "
                                             "uses 1024 (~7x faster)")
    upload: str = option("full", "full: every item row, unrated ones zero (hides which items "
                                 "were rated) | part: only the rated rows, their ids in "
                                 "plaintext (~20x cheaper)")

    def validate(self) -> None:
        super().validate()
        check_range("key_bits", self.key_bits, 512, 8192)
        if self.key_bits % 8:
            raise ConfigError(f"key_bits must be a multiple of 8, got {self.key_bits}")
        check_choice("upload", self.upload, UPLOAD_MODES)
        if self.secure_aggregation:  # an option shared with FCF's config that FedMF never runs
            raise ConfigError("fedmf protects item gradients with Paillier encryption; "
                              "secure_aggregation is FCF's option (use fcf)")
