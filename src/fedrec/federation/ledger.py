"""The communication ledger: exact bytes of every message, by round, direction, step and role."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from fedrec.federation.message import Message


@dataclass
class LedgerRow:
    messages: int = 0
    bytes: int = 0


@dataclass
class CommunicationLedger:
    """Counts every delivered (and every rejected) message.

    Keys are ``(round, direction, sender_role, receiver_role, step)``. Rejected messages (for
    example a client update holding NaN) were still transmitted, so they count as bytes too, and
    are additionally listed in :attr:`rejected`.
    """

    rows: dict[tuple[int, str, str, str, str], LedgerRow] = field(
        default_factory=lambda: defaultdict(LedgerRow)
    )
    rejected: list[dict] = field(default_factory=list)

    def record(self, msg: Message) -> None:
        key = (msg.round, msg.direction, msg.sender_role, msg.receiver_role, msg.step)
        row = self.rows[key]
        row.messages += 1
        row.bytes += msg.nbytes

    def record_bulk(self, template: Message, count: int, nbytes_each: int) -> None:
        """Record ``count`` identical-size messages (a broadcast) in O(1)."""
        key = (
            template.round, template.direction, template.sender_role,
            template.receiver_role, template.step,
        )
        row = self.rows[key]
        row.messages += count
        row.bytes += count * nbytes_each

    def reject(self, msg: Message, reason: str) -> None:
        self.rejected.append(
            {"round": msg.round, "sender": str(msg.sender), "step": msg.step, "reason": reason}
        )

    def totals(self, round: int | None = None) -> dict[str, int]:
        """Bytes and message counts by direction (all rounds, or one)."""
        out: dict[str, int] = defaultdict(int)
        for (rnd, direction, *_), row in self.rows.items():
            if round is not None and rnd != round:
                continue
            out[f"bytes_{direction}"] += row.bytes
            out[f"messages_{direction}"] += row.messages
            out["bytes_total"] += row.bytes
        for key in ("bytes_up", "bytes_down", "bytes_total"):
            out.setdefault(key, 0)
        return dict(out)

    def by_step(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for (_, direction, s, r, step), row in self.rows.items():
            key = f"{step} ({s}->{r})"
            out[key]["bytes"] += row.bytes
            out[key]["messages"] += row.messages
            out[key]["direction"] = direction  # type: ignore[assignment]
        return {k: dict(v) for k, v in out.items()}

    def by_role(self) -> dict[str, dict[str, int]]:
        """Bytes each kind of party sent and received (third party, aggregator: own rows)."""
        out: dict[str, dict[str, int]] = defaultdict(lambda: {"sent": 0, "received": 0})
        for (_, _, s, r, _), row in self.rows.items():
            out[s]["sent"] += row.bytes
            out[r]["received"] += row.bytes
        return dict(out)

    def state_dict(self) -> dict:
        return {
            "rows": [(list(k), v.messages, v.bytes) for k, v in self.rows.items()],
            "rejected": list(self.rejected),
        }

    def load_state_dict(self, state: dict) -> None:
        self.rows = defaultdict(LedgerRow)
        for key, messages, nbytes in state["rows"]:
            self.rows[tuple(key)] = LedgerRow(messages, nbytes)  # type: ignore[index]
        self.rejected = list(state["rejected"])
