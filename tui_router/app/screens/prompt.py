"""A one-line prompt (save as, open a file, set thresholds): Enter submits, escape cancels.

A path prompt whose text was refused (the file exists, no such file) opens again with the text as
typed and the refusal under it (`again`, RouterConsole.ask): nothing to type again."""

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

    def __init__(self, title: str, value: str = "", hint: str = "", placeholder: str = "", refusal: str = "") -> None:
        super().__init__()  # no id: a refused prompt opens again while the first is still leaving
        self.title_text = title
        self.value = value
        self.hint = hint
        self.placeholder = placeholder
        self.refusal = refusal

    def again(self, value: str, refusal: str) -> PromptModal:
        """This prompt once more, holding `value` as typed, `refusal` (why it was refused) under it."""
        return PromptModal(self.title_text, value=value, hint=self.hint, placeholder=self.placeholder, refusal=refusal)

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-dialog") as dialog:
            dialog.border_title = Content(visible(self.title_text, single_line=True))
            dialog.border_subtitle = "enter: ok · escape: cancel"
            # refused: the cursor after the text as typed, to correct it (selected, a key replaced it)
            yield SafeInput(value=self.value, placeholder=self.placeholder, select_on_focus=not self.refusal, id="prompt-input")
            if self.refusal:  # the file name and the sentence are untrusted: control characters shown
                yield Static(Content.styled(visible(self.refusal), "$error"), id="prompt-refusal")
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
