"""The message box: Enter routes; a paste keeps every line (line breaks become spaces)."""

from __future__ import annotations

from textual import events
from textual.binding import Binding

from ...textsafe import is_blank
from ..messages import TurnSubmitted
from ..terminal_input import unescape_paste
from .safe_input import SafeInput


class MessageInput(SafeInput):
    ALLOW_MAXIMIZE = False  # f10 / Maximize filled the screen with a one-line box: it fills it with panes
    BINDINGS = [
        # priority, for the same reason as the log's `i`: escape then `a` typed fast labels the turn
        Binding("escape", "app.focus_log", "Log", id="focus.log", tooltip="Move to the decision log to label and triage", priority=True),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(placeholder="Type a user message and press Enter to route it", **kwargs)

    def _on_paste(self, event: events.Paste) -> None:
        # Input keeps only the first line of a paste; a pasted user message must arrive whole.
        if event.text:
            pasted = unescape_paste(event.text)  # ESC set aside by the terminal reader (terminal_input)
            text = " ".join(line.strip() for line in pasted.splitlines() if line.strip())
            selection = self.selection
            if selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *selection)
        # Textual calls the handler of every class in the MRO: without prevent_default, Input's own
        # _on_paste inserted the first line a second time (issue 13: every paste doubled).
        event.prevent_default()
        event.stop()

    def typing(self) -> bool:
        """The operator has started the next message (its keys must not answer a dialog)."""
        return bool(self.value.strip())

    def _on_key(self, event: events.Key) -> None:
        # Enter is handled here, in key order, not through the binding: a binding runs only after
        # the key has bubbled up to the app, by which time the keys typed after it were already
        # inserted, so fast typing merged or split turns (issue 13). ctrl+j: an Enter typed before
        # the app put the terminal in raw mode arrives as "\n" (the tty turned CR into LF).
        if event.key in ("enter", "ctrl+j"):
            event.prevent_default()  # Input's own _on_key does not run
            event.stop()  # and the enter binding never fires: one submit per key
            self.submit_now()

    def submit_now(self) -> None:
        """Send exactly what is in the box now, and empty it, before the next key is handled."""
        message = self.value.strip()
        if is_blank(message):  # nothing visible (U+200B alone, a bidi control): not a message
            return
        self.value = ""
        self.post_message(TurnSubmitted(message))

    async def action_submit(self) -> None:
        self.submit_now()
