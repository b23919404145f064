"""Errors that the CLI reports as one clear line and a non-zero exit (never a traceback)."""


class FedrecError(Exception):
    """Base class of every error caused by the user's input or environment."""


class DataError(FedrecError):
    """A data file is missing, malformed, truncated or out of range."""


class ConfigError(FedrecError):
    """An unknown name or an out-of-range hyperparameter."""


class ProtocolError(FedrecError):
    """A party broke the protocol (for example too few clients survived to unmask a sum)."""


class ResumeRefused(ConfigError):
    """``--resume`` found a checkpoint of a different run (algorithm, configuration, dataset or
    data); the message names the first setting that differs."""
