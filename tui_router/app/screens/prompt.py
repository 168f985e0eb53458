"""A one-line prompt (save as, open a file, set thresholds): Enter submits, escape cancels."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static

from ...textsafe import visible
from ..widgets.safe_input import SafeInput


class PromptModal(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel", tooltip="Close without doing anything")]

    def __init__(self, title: str, value: str = "", hint: str = "", placeholder: str = "") -> None:
        super().__init__(id="prompt-modal")
        self.title_text = title
        self.value = value
        self.hint = hint
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-dialog") as dialog:
            dialog.border_title = Content(visible(self.title_text, single_line=True))
            dialog.border_subtitle = "enter: ok · escape: cancel"
            yield SafeInput(value=self.value, placeholder=self.placeholder, id="prompt-input")
            yield Static(Content.styled(self.hint or "enter: ok · escape: cancel", "$text-muted"), id="prompt-hint")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        self.dismiss(value or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
