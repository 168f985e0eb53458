"""What the panes show for one turn: a plain snapshot the widgets render (no Textual here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..session import Turn, TurnDecision

BAND_STYLE = {
    "high": "bold $success",
    "medium": "bold $warning",
    "low": "bold $primary",
    "unresolved": "bold $error",
}
# Theme variable behind each band, for widgets that need a concrete colour (DataTable cells).
BAND_VARIABLE = {"high": "success", "medium": "warning", "low": "primary", "unresolved": "error"}

RISK_STYLE = {
    "read": "$text-muted",
    "write": "$warning",
    "outbound": "$error",
    "payment": "$error",
    "permission": "$error",
    "escalation": "$accent",
}


@dataclass
class TurnView:
    """One turn as the Candidates and Distribution panes need it."""

    message: str
    decision: TurnDecision | None
    label: str | None = None
    acceptable: list[str] = field(default_factory=list)
    none_option: str = "defer_to_llm"
    formula: str = "reference"
    routing: bool = False  # still in flight
    waiting: str = ""  # while in flight: what it waits for
    heading: str = ""  # e.g. "turn 3" or "replay 3: new decision"

    @classmethod
    def of(cls, turn: Turn, none_option: str, formula: str, heading: str = "", routing: bool = False, waiting: str = "") -> TurnView:
        return cls(
            message=turn.message,
            decision=turn.decision,
            label=turn.label,
            acceptable=list(turn.acceptable),
            none_option=none_option,
            formula=formula,
            routing=routing,
            waiting=waiting,
            heading=heading,
        )
