"""The full output of a turn's fallback command (the log shows only its start)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ...session import FallbackRecord
from ...textsafe import visible


class FallbackOutputScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,enter", "close", "Close", id="output.close", tooltip="Close")]

    def __init__(self, index: int, record: FallbackRecord) -> None:
        super().__init__(id="output-modal")
        self.index = index
        self.record = record

    def compose(self) -> ComposeResult:
        r = self.record
        head = f"exit {r.exit_code}" if r.exit_code is not None else "no exit code"
        if r.duration_ms is not None:
            head += f" · {r.duration_ms:.0f} ms"
        if r.truncated:
            head += f" · {r.cut_note()}"
        with Vertical(id="output-dialog") as dialog:
            dialog.border_title = f"Fallback output, turn {self.index + 1}"
            dialog.border_subtitle = "escape: close"
            # command output and session text are untrusted: control characters shown, not sent
            yield Static(Content.assemble((visible(" ".join(r.command)), "$text-muted"), "\n", (head, "bold")), id="output-head")
            if r.error:
                yield Static(Content.styled(visible(r.error), "$error"), id="output-error")
            with VerticalScroll(id="output-scroll"):
                yield Static(Content(visible(r.output) or "(no output)"), id="output-text")
                if r.stderr:
                    yield Static(Content.assemble(("stderr\n", "bold $text-muted"), (visible(r.stderr), "$text-muted")), id="output-stderr")
        yield Footer()

    def on_mount(self) -> None:
        # the output can be 64 KB: focus its scroll so up/down, page up/down, home and end read it
        self.query_one("#output-scroll", VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)
