"""Feras's step names (on the wire and in the ledger), shared by its server, hosts and AS."""

#: Host -> AS: the first-layer embeddings of the visible nodes of this iteration's subgraph.
EMBED = "embed"
#: Server -> AS; AS -> each uploading host: the averaged embeddings of its subgraph's nodes.
AVERAGE_EMBEDDINGS = "average_embeddings"
#: Host: the rest of the forward pass on the averaged embeddings, backward, one Adam step; every
#: q-th iteration its weights go to the AS.
TRAIN = "train"
#: Server -> AS; AS -> each host: the average of the hosts' weights.
AVERAGE_WEIGHTS = "average_weights"
#: Server -> host (empty): take the averaged weights now, so that no message waits in an inbox
#: across rounds (a checkpoint holds the parties' states, not their inboxes).
TAKE_WEIGHTS = "take_weights"
#: Evaluation: full-graph first-layer embeddings to the AS, then each host scores its own nodes.
EVAL_EMBED = "eval_embed"
EVALUATE = "evaluate"
