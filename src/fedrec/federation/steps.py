"""Declared protocol steps: a party's steps are methods marked with :func:`step`.

A :class:`~fedrec.federation.runtime.PartyLogic` subclass declares each step it runs::

    class Client(PartyLogic):
        @step(TRAIN, cohort=True, broadcast=True)
        def train(self, ctxs, payload): ...        # the cohort at once, one shared payload

        @step(REPORT)
        def report(self, ctx, payload): ...        # one party, its own request

Declarations are collected per class when it is defined (from its bases and mixins too, a
subclass's declaration of a name replacing its base's), and the default
:meth:`~fedrec.federation.runtime.PartyLogic.handle_cohort` dispatches to them:

* ``cohort=False``: the method is called once per party, ``(ctx, payload) -> Outgoing``;
* ``cohort=True``: once for the whole cohort, ``(ctxs, payloads) -> list[Outgoing]`` in
  ``ctxs``' order (vectorised work; each output may depend on its own party only);
* ``broadcast=True``: the step is only ever broadcast (:meth:`Runtime.broadcast`: one payload
  to the whole cohort, which the runtime says in :attr:`PartyContext.broadcast`); a cohort
  method receives that one payload instead of a list. A broadcast step reached by a call with
  per-party requests is a :class:`~fedrec.errors.ProtocolError`.

A step nobody declared is a one-line :class:`~fedrec.errors.ProtocolError` naming the declared
ones. Step names are the strings on the wire and in the ledger; each method defines its own
once (its ``steps`` module), for its server and its parties to share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from fedrec.errors import ProtocolError

if TYPE_CHECKING:
    from fedrec.core.codec import Payload
    from fedrec.federation.runtime import Outgoing, PartyContext

_MARK = "__fedrec_step__"
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class DeclaredStep:
    """One declared step: its wire name, the method (by attribute name, so that a subclass's
    override of the method is what runs) and how it takes its cohort."""

    name: str
    attribute: str
    cohort: bool
    broadcast: bool

    def run(self, logic: object, ctxs: Sequence[PartyContext],
            payloads: Sequence[Payload]) -> list[Outgoing]:
        method = getattr(logic, self.attribute)
        if self.broadcast and not (ctxs and all(c.broadcast for c in ctxs)):
            raise ProtocolError(f"step {self.name!r} takes one payload broadcast to the cohort, "
                                "not a request per party")
        if self.cohort:
            return list(method(ctxs, payloads[0] if self.broadcast else payloads))
        return [method(c, p) for c, p in zip(ctxs, payloads, strict=True)]


def step(name: str, *, cohort: bool = False, broadcast: bool = False) -> Callable[[F], F]:
    """Declare the decorated method as the party's step ``name`` (module docstring)."""
    if not name:
        raise ValueError("a step needs a name")

    def declare(method: F) -> F:
        setattr(method, _MARK, (name, cohort, broadcast))
        return method

    return declare


def collect_steps(cls: type) -> dict[str, DeclaredStep]:
    """The steps ``cls`` declares, its own and its bases' (the most derived declaration of a
    name wins). Two methods of one class declaring one name is a :class:`TypeError`."""
    found: dict[str, DeclaredStep] = {}
    for klass in reversed(cls.__mro__):
        own: dict[str, str] = {}
        for attribute, value in vars(klass).items():
            mark = getattr(value, _MARK, None)
            if mark is None:
                continue
            name, cohort, broadcast = mark
            if name in own:
                raise TypeError(f"{klass.__qualname__} declares step {name!r} twice "
                                f"({own[name]} and {attribute})")
            own[name] = attribute
            found[name] = DeclaredStep(name, attribute, cohort, broadcast)
    return found


def undeclared(owner: str, step_name: str, declared: Mapping[str, DeclaredStep]) -> ProtocolError:
    """The error for a step ``owner`` does not declare."""
    names = ", ".join(sorted(declared)) or "none"
    return ProtocolError(f"{owner} has no step {step_name!r} (declared: {names})")
