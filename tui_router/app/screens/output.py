"""The full output of a turn's fallback command (the log shows only its start)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ...session import FallbackRecord
from ...textsafe import visible
from ..widgets.wrapped_lines import WrappedLines


def output_lines(record: FallbackRecord) -> list[str]:
    """The output, then its stderr under a `stderr` line, as plain lines (control characters shown)."""
    lines = visible(record.output).rstrip("\n").split("\n") if record.output else ["(no output)"]
    if record.stderr:
        lines += ["", "stderr", *visible(record.stderr).rstrip("\n").split("\n")]
    return lines


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
            # drawn a screen at a time: a Static laid out all of a 64 KB output (thousands of lines) to
            # open the dialog and again at each key that scrolled it, about a second each, the
            # console frozen
            yield WrappedLines(output_lines(r), id="output-scroll")
        yield Footer()

    def on_mount(self) -> None:
        # the output can be 64 KB: focus its scroll so up/down, page up/down, home and end read it
        self.query_one("#output-scroll", WrappedLines).focus()

    def action_close(self) -> None:
        self.dismiss(None)
