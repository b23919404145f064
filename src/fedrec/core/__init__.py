"""What every layer of fedrec may use: the wire format of a message (:mod:`~fedrec.core.codec`),
keyed, order-independent random streams (:mod:`~fedrec.core.rng`) and torch's thread count for
a run (:mod:`~fedrec.core.threads`). It imports nothing of fedrec but :mod:`fedrec.errors` (the
layering is written in ``pyproject.toml`` and checked by ``lint-imports``)."""
