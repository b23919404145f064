"""FedGNN's step names (on the wire and in the ledger), shared by its server, clients and third
party."""

TRAIN = "train"
EVALUATE = "evaluate"
#: Graph expansion: the server hands the clients a fresh key; each sends its tokens to the
#: third party (routed); the third party routes each its neighbours; the clients install them.
EXPAND_KEY = "expand_key"
EXPAND_MATCH = "expand_match"
EXPAND_INSTALL = "expand_install"
