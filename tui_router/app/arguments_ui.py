"""The console's arguments step (issue 15), kept apart from app.py so the app's refactor merges easily.

A mixin for RouterConsole: the `g` key / palette action builds the selected turn's arguments in a
worker (the command may be slow), `ArgumentsBuilt` carries the result back, and two palette actions
make the built arguments the turn's label (`expected_arguments`) as they are or after editing them
as JSON. Untrusted text (values, errors) is only ever shown through Content, never markup.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding
from textual.content import Content
from textual.message import Message

from ..arguments import ArgumentsResult, abuild_arguments
from ..session import ArgumentsRecord, Turn
from .format import shorten

if TYPE_CHECKING:
    from ..route import Decision

ARGUMENTS_BINDINGS = [
    Binding("g", "build_arguments", "Arguments", id="turn.arguments", show=False, tooltip="Build and validate the selected turn's tool arguments"),
]


class ArgumentsBuilt(Message):
    """The arguments step finished for one turn."""

    def __init__(self, index: int, result: ArgumentsResult, turn: Turn) -> None:
        super().__init__()
        self.index = index
        self.result = result
        self.turn = turn


def record_of(decision: Decision) -> ArgumentsRecord | None:
    """The session record of a routed decision's arguments (None when none were built)."""
    if decision.arguments is None:
        return None
    record = decision.arguments.to_record()
    record.demoted = decision.demoted
    return record


def arguments_detail(turn: Turn) -> list[Content]:
    """Lines for the turn detail: the arguments, valid or the problems, and the label when there is one."""
    parts: list[Content] = []
    record = turn.arguments
    if record is not None:
        state = "valid" if record.valid else "invalid"
        head = f"arguments ({record.tool or '?'}, {record.source}, {state}"
        head += ", execute demoted to confirm)" if record.demoted else ")"
        parts.append(Content.styled(head, "bold" if record.valid else "bold $warning"))
        if record.values:
            parts.append(Content(shorten(json.dumps(record.values, ensure_ascii=False), 400)))
        for problem in ([record.error] if record.error else []) + record.errors[:6]:
            parts.append(Content.styled(shorten(problem, 200), "$warning"))
    if turn.expected_arguments:
        parts.append(
            Content.assemble(("expected arguments ", "$text-muted"), shorten(json.dumps(turn.expected_arguments, ensure_ascii=False), 300))
        )
    return parts


def confirm_arguments_text(turn: Turn) -> str:
    """One or two lines for the confirm dialog."""
    record = turn.arguments
    if record is None:
        return ""
    values = json.dumps(record.values, ensure_ascii=False) if record.values else "(none)"
    if record.valid:
        return f"arguments {shorten(values, 300)} · valid"
    problems = "; ".join(([record.error] if record.error else []) + record.errors[:3])
    return f"arguments {shorten(values, 300)}\ninvalid: {shorten(problems, 300)}"


class ArgumentsActions:
    """Mixed into RouterConsole (which provides session, router, config, notify, _selected, _turn_changed)."""

    def action_build_arguments(self) -> None:
        selected = self._selected()  # type: ignore[attr-defined]
        if selected is None:
            return
        index, turn = selected
        d = turn.decision
        choice = d.rerouted_to or d.choice if d is not None else None
        tool = self.router.catalog.get(choice) if self.router and choice else None  # type: ignore[attr-defined]
        if tool is None or tool.is_escalation:
            self.notify("The selected turn has no tool choice to build arguments for.", markup=False)  # type: ignore[attr-defined]
            return
        self.build_turn_arguments(index, turn, tool)

    def arguments_after_outcome(self, index: int, outcome: str, rerouted_to: str | None) -> None:
        """A person re-routed the turn: the arguments built for the old choice no longer apply."""
        if outcome != "rerouted" or not rerouted_to:
            return
        turn = self.session.turns[index]  # type: ignore[attr-defined]
        tool = self.router.catalog.get(rerouted_to) if self.router else None  # type: ignore[attr-defined]
        if tool is None or tool.is_escalation:
            turn.arguments = None
            self._turn_changed(index)  # type: ignore[attr-defined]
        elif self.config.arguments.auto:  # type: ignore[attr-defined]
            self.build_turn_arguments(index, turn, tool)

    @work(exclusive=True, exit_on_error=False, group="arguments")
    async def build_turn_arguments(self, index: int, turn: Turn, tool: Any) -> None:
        config = self.config  # type: ignore[attr-defined]
        result = await abuild_arguments(tool, turn.message, config.arguments, secret_env=config.secret_env_names())
        self.post_message(ArgumentsBuilt(index, result, turn))  # type: ignore[attr-defined]

    def on_arguments_built(self, message: ArgumentsBuilt) -> None:
        turns = self.session.turns  # type: ignore[attr-defined]
        if message.index >= len(turns) or turns[message.index] is not message.turn:
            return  # the session was switched meanwhile
        turns[message.index].arguments = message.result.to_record()
        self._turn_changed(message.index)  # type: ignore[attr-defined]
        severity = "information" if message.result.valid else "warning"
        self.notify(f"Turn {message.index + 1} arguments: {message.result.summary()}", severity=severity, markup=False)  # type: ignore[attr-defined]

    def action_arguments_accept(self) -> None:
        selected = self._selected()  # type: ignore[attr-defined]
        if selected is None:
            return
        index, turn = selected
        if turn.arguments is None or not turn.arguments.values:
            self.notify("The selected turn has no built arguments to accept (press g to build them).", markup=False)  # type: ignore[attr-defined]
            return
        self.set_expected_arguments(index, dict(turn.arguments.values))

    def action_arguments_edit(self) -> None:
        from .screens.prompt import PromptModal

        selected = self._selected()  # type: ignore[attr-defined]
        if selected is None:
            return
        index, turn = selected
        current = turn.expected_arguments or (turn.arguments.values if turn.arguments else {}) or {}

        def edited(value: str | None) -> None:
            if value is not None:
                self.set_expected_arguments_text(index, value)

        self.push_screen(  # type: ignore[attr-defined]
            PromptModal(
                f"Expected arguments for turn {index + 1} (JSON object)",
                value=json.dumps(current, ensure_ascii=False),
                hint="enter: save as the label · esc: cancel · {} clears it",
            ),
            edited,
        )

    def set_expected_arguments_text(self, index: int, text: str) -> bool:
        try:
            value = json.loads(text)
        except ValueError as exc:
            self.notify(f"Not saved: the expected arguments are not valid JSON ({exc.msg}).", severity="error", markup=False)  # type: ignore[attr-defined]
            return False
        if not isinstance(value, dict):
            self.notify("Not saved: the expected arguments must be a JSON object like {\"to\": \"a@b.io\"}.", severity="error", markup=False)  # type: ignore[attr-defined]
            return False
        if any(v is None for v in value.values()):
            self.notify("Not saved: null cannot be kept in a session file; leave the key out instead.", severity="error", markup=False)  # type: ignore[attr-defined]
            return False
        self.set_expected_arguments(index, value)
        return True

    def set_expected_arguments(self, index: int, values: dict[str, Any]) -> None:
        turn = self.session.turns[index]  # type: ignore[attr-defined]
        turn.expected_arguments = values or None
        self._turn_changed(index)  # type: ignore[attr-defined]
        said = "cleared" if not values else f"saved ({len(values)} key{'s' if len(values) != 1 else ''})"
        self.notify(f"Turn {index + 1}: expected arguments {said}.", markup=False)  # type: ignore[attr-defined]

    def arguments_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("arguments: build", "Build and validate the selected turn's tool arguments (g)", self.action_build_arguments)
        yield SystemCommand("arguments: accept as label", "Keep the built arguments as the turn's expected arguments", self.action_arguments_accept)
        yield SystemCommand("arguments: edit label", "Edit the turn's expected arguments as JSON", self.action_arguments_edit)
