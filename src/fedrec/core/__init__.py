"""What every layer of fedrec may use: the wire format of a message (:mod:`~fedrec.core.codec`)
and keyed, order-independent random streams (:mod:`~fedrec.core.rng`). It imports nothing of
fedrec but :mod:`fedrec.errors` (the layering is written in ``pyproject.toml`` and checked by
``lint-imports``)."""
