"""PTF-FedRec's step names (on the wire and in the ledger), shared by its server and clients."""

TRAIN = "train"
DISPERSE = "disperse"
EVALUATE = "evaluate"
