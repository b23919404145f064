"""Privacy layer: clipping, DP mechanisms and accounting, secure aggregation, Paillier
homomorphic encryption, private matching.

One concept per module; each module states its guarantee where it is computed.
"""

from fedrec.privacy.accounting import (
    PLDInfeasible,
    PrivacyAccountant,
    PrivacyReport,
    Release,
    worst_client_accountant,
)
from fedrec.privacy.clipping import clip_l2, clip_l2_rows, clip_linf, clip_linf_rows
from fedrec.privacy.fixedpoint import FixedPointEncoder
from fedrec.privacy.matching import ItemTokenizer
from fedrec.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    LinfLaplaceEpsilon,
    analytic_gaussian_delta,
    linf_laplace_epsilon,
)
from fedrec.privacy.paillier import EncryptedArray, generate_keypair
from fedrec.privacy.report import (
    NO_GUARANTEE,
    attack_fields,
    no_guarantee,
    per_coordinate_epsilon,
    per_upload_epsilon,
    run_epsilon,
)
from fedrec.privacy.secagg import SecAggClient, SecAggConfig, SecAggServer, secure_sum

__all__ = [
    "NO_GUARANTEE",
    "EncryptedArray",
    "FixedPointEncoder",
    "GaussianMechanism",
    "ItemTokenizer",
    "LaplaceMechanism",
    "LinfLaplaceEpsilon",
    "PLDInfeasible",
    "PrivacyAccountant",
    "PrivacyReport",
    "Release",
    "SecAggClient",
    "SecAggConfig",
    "SecAggServer",
    "analytic_gaussian_delta",
    "attack_fields",
    "clip_l2",
    "clip_l2_rows",
    "clip_linf",
    "clip_linf_rows",
    "generate_keypair",
    "linf_laplace_epsilon",
    "no_guarantee",
    "per_coordinate_epsilon",
    "per_upload_epsilon",
    "run_epsilon",
    "secure_sum",
    "worst_client_accountant",
]
