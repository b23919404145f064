"""The run options' flags of ``fedrec run``, ``fedrec deploy`` and ``fedrec reproduce``.

Each flag is a field of :class:`fedrec.options.RunOptions`, and takes its default, its help and
its value type from that field, so that a default is stated once, there. ``--quiet`` is the one
flag that is the negation of its field (``progress``); ``--client-secret`` falls back to
``$FEDREC_CLIENT_SECRET``.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from fedrec.options import SECRET_ENV, RunOptions, option_field

if TYPE_CHECKING:
    from fedrec.federation.secrets import ClientSecrets


def add_run_option(parser: argparse.ArgumentParser, name: str, **kwargs: Any) -> None:
    """Add the flag of run option ``name`` (``--name-with-dashes``; ``progress``: ``--quiet``)
    with its field's default, help and type; ``kwargs`` (``metavar``, ``choices``) go to
    :meth:`argparse.ArgumentParser.add_argument` as they are."""
    f = option_field(name)
    text = f.metadata["help"]
    if name == "progress":  # a flag to turn it off: the default shows it
        parser.add_argument("--quiet", dest=name, action="store_false", default=f.default,
                            help=f"no {text}", **kwargs)
    elif f.default is False:
        parser.add_argument(_flag(name), dest=name, action="store_true", default=False,
                            help=text, **kwargs)
    else:
        shown = "" if f.default is None else f" (default {f.default:g})" if isinstance(
            f.default, float) else f" (default {f.default})"
        parser.add_argument(_flag(name), dest=name, default=f.default,
                            type=f.metadata["type"] or type(f.default), help=text + shown,
                            **kwargs)


def add_preset_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--preset", metavar="NAME",
        help="a packaged setting over the defaults: paper (the paper's settings, as its "
             "reproduction runs them); the defaults are the best fedrec chose on validation")


def add_client_secret_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        _flag("client_secret"), metavar="HEX",
        help=f"{option_field('client_secret').metadata['help'].split(' (None')[0]}, given to "
        f"the clients' side only, never to the server (default: ${SECRET_ENV}, else fresh OS "
        f"entropy: the run is then not reproducible)")


def client_secrets_of(args: argparse.Namespace) -> ClientSecrets:
    """The experimenter's client secret from ``--client-secret`` or ``$FEDREC_CLIENT_SECRET``
    (hex); fresh OS entropy when neither is set (drawn here, once: ``fedrec deploy --compare``
    gives the same root to the deployment and the simulator)."""
    from fedrec.errors import ConfigError
    from fedrec.federation.secrets import ClientSecrets

    source, text = ("--client-secret", args.client_secret) if args.client_secret else (
        f"${SECRET_ENV}", os.environ.get(SECRET_ENV))
    try:
        return ClientSecrets.from_hex(text)
    except ConfigError as exc:  # named, so that a stale variable is found (never echoed)
        raise ConfigError(f"{source}: {exc}") from None


def run_options_of(args: argparse.Namespace, engine: str) -> RunOptions:
    """The :class:`RunOptions` of parsed arguments: every run option a flag was added for
    (:func:`add_run_option`), the client secret where there is a flag for it
    (:func:`client_secrets_of`), and ``engine``."""
    given = {name: value for name, value in vars(args).items() if name in _OPTION_NAMES}
    if "client_secret" in given:  # a command with --client-secret (fedrec reproduce has none)
        given["client_secret"] = client_secrets_of(args)
    return RunOptions(engine=engine, **given)


_OPTION_NAMES = frozenset(RunOptions.__dataclass_fields__)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")
