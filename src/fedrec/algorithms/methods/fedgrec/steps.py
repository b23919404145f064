"""FedGRec's step names (on the wire and in the ledger), shared by its server and clients; the
secure sum adds its own (:data:`fedrec.federation.secure_sum.SECAGG_STEPS`)."""

WARMUP_DEGREES = "warmup_degrees"
WARMUP_LATENT = "warmup_latent"
REQUEST_ROWS = "request_rows"
TRAIN = "train"
TRAIN_ROWS = "train_rows"
EVALUATE = "evaluate"
