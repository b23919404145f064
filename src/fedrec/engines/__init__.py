"""Engines that run fedrec's algorithms outside the in-process simulator.

An algorithm is written once (:mod:`fedrec.algorithms`): a
:class:`~fedrec.algorithms.base.ServerLogic` that talks to parties only through a
:class:`~fedrec.federation.runtime.Runtime`, and :class:`~fedrec.federation.runtime.PartyLogic`
objects for the other parties. An engine supplies another :class:`Runtime`:

* :mod:`fedrec.engines.flower` -- a real deployment on Flower (SuperLink, SuperNodes, a
  ServerApp and a ClientApp over the Message API); ``fedrec deploy`` starts one on loopback;
* :mod:`fedrec.engines.common` -- what both sides share: the in-process simulation (through the
  one round loop, :func:`fedrec.rounds.run_rounds`), a user slice of a dataset, the public
  metadata a server is allowed to build its logic from;
* :mod:`fedrec.engines.wire` -- payload bytes on the wire and end-to-end sealing of messages
  that one party routes to another through the server.
"""
