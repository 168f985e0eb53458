"""A text box that never draws a control character: every Input of the console is one."""

from __future__ import annotations

from rich.cells import cell_len, get_character_cell_size
from rich.text import Text
from textual import events
from textual.widgets import Input

from ...textsafe import symbols
from ..terminal_input import unescape_paste


class SafeInput(Input):
    # Input draws its value as is: a pasted C1 CSI or bidi override (or one in a session file's
    # name, offered by save-as) reached the terminal, and ESC sequences scrambled the line. Draw
    # each control character as one visible symbol instead (the value, and so the routed message,
    # is unchanged); the two cell mappings count the same way.
    @property
    def _value(self) -> Text:
        return Text(symbols(self.value), no_wrap=True, overflow="ignore", end="")

    def _position_to_cell(self, position: int) -> int:
        return cell_len(symbols(self.value[:position]))

    def _cell_offset_to_index(self, offset: int) -> int:
        offset += self.scroll_offset.x
        cell = 0
        shown = symbols(self.value)
        for index, char in enumerate(shown):
            width = get_character_cell_size(char)
            if cell <= offset < cell + width:
                return index
            cell += width
        return max(0, min(offset, len(shown)))

    def _on_paste(self, event: events.Paste) -> None:
        # ESC set aside by the terminal reader (terminal_input) comes back; Input's own handler
        # (next in the MRO) inserts the text. MessageInput has its own _on_paste.
        event.text = unescape_paste(event.text)
