"""FL-MV-DSSM's step names (on the wire and in the ledger), shared by its server, devices and
views; the secure sum adds its own (:data:`fedrec.federation.secure_sum.SECAGG_STEPS`)."""

VIEW_TRAIN = "view_train"  # server -> view: the global model; view -> its device: its update
LOCAL_AGGREGATE = "local_aggregate"  # server -> device: the upload of its views' updates
VIEW_PREDICT = "view_predict"  # server -> view: the model; view -> its device: its noisy P
EVALUATE = "evaluate"  # server -> device: score the split; device -> server: its metrics
