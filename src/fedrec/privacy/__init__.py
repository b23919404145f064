"""Privacy layer: clipping, DP mechanisms and accounting, secure aggregation (Bonawitz et al.
2017 and SecAgg+, Bell et al. 2020), Paillier homomorphic encryption, private matching.

One concept per module; each module states its guarantee where it is computed.
"""

from fedrec.privacy.accounting import (
    AccountantReport,
    PLDInfeasible,
    PrivacyAccountant,
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
    Attack,
    Caveat,
    Guarantee,
    NoGuarantee,
    PrivacyReport,
    per_coordinate_epsilon,
    per_upload_epsilon,
    run_epsilon,
)
from fedrec.privacy.secagg import SecAggClient, SecAggConfig, SecAggServer, secure_sum
from fedrec.privacy.secagg_graph import GraphParameters, secaggplus_parameters
from fedrec.privacy.secagg_plus import (
    SecAggPlusClient,
    SecAggPlusConfig,
    SecAggPlusServer,
    secaggplus_config,
    secure_sum_plus,
)

__all__ = [
    "NO_GUARANTEE",
    "AccountantReport",
    "Attack",
    "Caveat",
    "EncryptedArray",
    "FixedPointEncoder",
    "GaussianMechanism",
    "GraphParameters",
    "Guarantee",
    "ItemTokenizer",
    "LaplaceMechanism",
    "LinfLaplaceEpsilon",
    "NoGuarantee",
    "PLDInfeasible",
    "PrivacyAccountant",
    "PrivacyReport",
    "Release",
    "SecAggClient",
    "SecAggConfig",
    "SecAggPlusClient",
    "SecAggPlusConfig",
    "SecAggPlusServer",
    "SecAggServer",
    "analytic_gaussian_delta",
    "clip_l2",
    "clip_l2_rows",
    "clip_linf",
    "clip_linf_rows",
    "generate_keypair",
    "linf_laplace_epsilon",
    "per_coordinate_epsilon",
    "per_upload_epsilon",
    "run_epsilon",
    "secaggplus_config",
    "secaggplus_parameters",
    "secure_sum",
    "secure_sum_plus",
    "worst_client_accountant",
]
