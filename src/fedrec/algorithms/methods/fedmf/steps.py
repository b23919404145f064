"""FedMF's step names (on the wire and in the ledger), shared by its server and clients."""

PUBLIC_KEY = "public_key"
TRAIN = "train"
EVALUATE = "evaluate"
