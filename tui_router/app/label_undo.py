"""Undo for the Decision log's label keys, kept apart from app.py so the app's refactors merge easily.

`x` cleared a label and `a` overwrote one (a reviewer's hand label included) at a keystroke, with
no way back: the review queue had `u`, the console did not. A mixin for RouterConsole: every label
change made from the console remembers the label it replaced; `u` in the Decision log (palette:
`label: undo`) puts the last one back, several levels deep, and saves it like any other change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.app import SystemCommand
from textual.binding import Binding

if TYPE_CHECKING:
    from ..session import Session

UNDO_BINDING = Binding("u", "app.label_undo", "Undo", id="label.undo", tooltip="Put back the label the last a / l / x replaced")
UNDO_DEPTH = 100


@dataclass(frozen=True)
class LabelStep:
    session: Session  # a step belongs to the session it was made in: never undone into another one
    index: int
    label: str | None
    source: str | None
    reviewer: str | None


class LabelUndo:
    """Mixed into RouterConsole (which provides session, workspace, _relabel, _turn_changed, notify)."""

    _label_steps: list[LabelStep]

    def remember_label(self, index: int) -> None:
        """Call before turn `index`'s label changes."""
        turn = self.session.turns[index]  # type: ignore[attr-defined]
        steps = self.__dict__.setdefault("_label_steps", [])
        steps.append(LabelStep(self.session, index, turn.label, turn.label_source, turn.reviewer))  # type: ignore[attr-defined]
        del steps[:-UNDO_DEPTH]

    def action_label_undo(self) -> None:
        steps = [s for s in self.__dict__.get("_label_steps", []) if s.session is self.session]  # type: ignore[attr-defined]
        self._label_steps = steps
        if not steps:
            self.notify("Nothing to undo: no label was changed in this session since it was opened.", markup=False)  # type: ignore[attr-defined]
            return
        step = steps.pop()
        turn = self.session.turns[step.index]  # type: ignore[attr-defined]

        def restore() -> None:
            self.workspace.set_label(step.index, step.label, step.source or "hand")  # type: ignore[attr-defined]
            turn.reviewer = step.reviewer  # who gave it, as before the change

        self._relabel(step.index, restore)  # type: ignore[attr-defined]
        self._turn_changed(step.index)  # type: ignore[attr-defined]
        back = f"'{step.label}' again" if step.label else "no label again"
        self.notify(f"Undone: turn {step.index + 1} has {back}.", markup=False)  # type: ignore[attr-defined]

    def label_undo_commands(self):
        yield SystemCommand("label: undo", "Put back the label the last accept / pick / clear replaced (u)", self.action_label_undo)
