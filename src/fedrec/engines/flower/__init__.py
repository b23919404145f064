"""fedrec on Flower (1.42, Message API): the same algorithm code on a real FL deployment.

* :class:`~fedrec.engines.flower.runtime.FlowerRuntime` -- the Runtime a ServerApp gives the
  algorithm's orchestrator (one Flower message per SuperNode and step, ledger metering,
  non-finite rejection, unresponsive SuperNodes as dropouts, sealed relay of routed messages);
* :mod:`~fedrec.engines.flower.node` -- the ClientApp (``client_app``): a SuperNode hosts a
  share of the clients (``--node-config partition-id/num-partitions/data-dir``) with the parties
  co-located with them (``Party.host``: FL-MV-DSSM's views), or a service party
  (``role="third_party"``);
* :mod:`~fedrec.engines.flower.server` -- the ServerApp (``server_app``);
* :func:`~fedrec.engines.flower.deploy.deploy` -- SuperLink + SuperNodes on loopback
  (``fedrec deploy``).
"""

from fedrec.engines.flower.deploy import DeployError, deploy

__all__ = ["DeployError", "deploy"]
