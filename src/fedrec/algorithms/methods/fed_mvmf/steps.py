"""FED-MVMF's step names (on the wire and in the ledger), shared by its server and clients."""

TRAIN = "train"  # server -> clients: V, A; client -> server: the gradients of V and A
EVALUATE = "evaluate"  # server -> clients: V, A and the split; client -> server: its metrics
