"""The message box: Enter routes; a paste keeps every line (line breaks become spaces)."""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.widgets import Input

from ..messages import TurnSubmitted


class MessageInput(Input):
    BINDINGS = [
        Binding("escape", "app.focus_log", "Log", id="focus.log", tooltip="Move to the decision log to label and triage"),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(placeholder="Type a user message and press Enter to route it", **kwargs)

    def _on_paste(self, event: events.Paste) -> None:
        # Input keeps only the first line of a paste; a pasted user message must arrive whole.
        if event.text:
            text = " ".join(line.strip() for line in event.text.splitlines() if line.strip())
            selection = self.selection
            if selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *selection)
        # Textual calls the handler of every class in the MRO: without prevent_default, Input's own
        # _on_paste inserted the first line a second time (issue 13: every paste doubled).
        event.prevent_default()
        event.stop()

    async def action_submit(self) -> None:
        message = self.value.strip()
        if not message:
            return
        self.value = ""
        self.post_message(TurnSubmitted(message))
