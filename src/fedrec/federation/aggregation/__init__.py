"""Aggregation: the algorithms' sums and means (:mod:`.sums`), and the robust rules against
malicious clients, each returning an estimate of the SUM of the benign updates:

* :mod:`.updates`: a cohort's sparse row updates, coalesced (:class:`RowUpdates`);
* :mod:`.norm`: L2 norm bounding of whole updates and their sum;
* :mod:`.coordinate`: coordinate-wise median and trimmed mean, over the cohort or per item;
* :mod:`.krum`: multi-Krum, on dense or sparse updates;
* :mod:`.defense`: the defenses by name, their check before training, and :func:`robust_sum`,
  the call a server makes on a cohort's sparse updates;
* :mod:`.options`: a run's choice of defense, as options a method's config inherits.
"""

from fedrec.federation.aggregation.coordinate import coordinate_median, per_item, trimmed_mean
from fedrec.federation.aggregation.defense import (
    DEFENSES,
    Defense,
    Param,
    check_defense,
    robust_sum,
)
from fedrec.federation.aggregation.krum import multi_krum, multi_krum_choice
from fedrec.federation.aggregation.norm import norm_bound, norm_bounded_sum
from fedrec.federation.aggregation.options import DefenseOptions
from fedrec.federation.aggregation.sums import fedavg, sum_rows, weighted_mean
from fedrec.federation.aggregation.updates import RowUpdates

__all__ = [
    "DEFENSES",
    "Defense",
    "DefenseOptions",
    "Param",
    "RowUpdates",
    "check_defense",
    "coordinate_median",
    "fedavg",
    "multi_krum",
    "multi_krum_choice",
    "norm_bound",
    "norm_bounded_sum",
    "per_item",
    "robust_sum",
    "sum_rows",
    "trimmed_mean",
    "weighted_mean",
]
