"""fedavg-gcn's step names (on the wire and in the ledger), shared by its server and hosts."""

TRAIN = "train"
EVALUATE = "evaluate"
