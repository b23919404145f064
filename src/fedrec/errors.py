"""Errors that the CLI reports as one clear line and a non-zero exit (never a traceback)."""


class FedrecError(Exception):
    """Base class of every error caused by the user's input or environment."""


class DataError(FedrecError):
    """A data file is missing, malformed, truncated or out of range."""


class ConfigError(FedrecError):
    """An unknown name or an out-of-range hyperparameter."""


class WriteError(FedrecError):
    """A file could not be written (a full disk, a quota, a read-only folder): the machine's
    state, not the run's settings (:mod:`fedrec.core.files`)."""


class ProtocolError(FedrecError):
    """A party broke the protocol (for example too few clients survived to unmask a sum)."""


class BelowThreshold(ProtocolError):
    """A secure sum ended with fewer surviving clients than its threshold (in SecAgg+: in one
    client's neighbourhood): ``count`` survived, ``threshold`` were needed."""

    def __init__(self, message: str, count: int, threshold: int) -> None:
        super().__init__(message)
        self.count = count
        self.threshold = threshold


class NoUpdateError(ProtocolError):
    """A step of a round ended with no reply at all: every party asked dropped out, sent
    nothing, or sent a reply the runtime rejected. Raised by
    :meth:`fedrec.federation.runtime.Runtime.updates` (one wording for every algorithm) and by
    the sums that receive a round's uploads (:mod:`fedrec.federation.secure_sum`,
    :mod:`fedrec.federation.dp_sum`)."""


class ResumeRefused(ConfigError):
    """``--resume`` found a checkpoint of a different run (algorithm, configuration, dataset or
    data); the message names the first setting that differs."""
