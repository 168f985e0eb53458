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


def safe_command_palette(**kwargs):
    """Textual's command palette with a SafeInput search box: its own Input drew a pasted C1 CSI or
    bidi override raw, like every Input before SafeInput."""
    from textual.command import CommandInput, CommandList, CommandPalette, SearchIcon
    from textual.containers import Horizontal, Vertical
    from textual.widgets import Button, Footer, LoadingIndicator

    class SafeCommandInput(CommandInput, SafeInput):
        # CommandInput first: Textual's CSS and queries ("CommandInput") follow the first base only;
        # CommandInput overrides none of SafeInput's drawing, so the MRO still reaches it
        pass

    class SafeCommandPalette(CommandPalette):
        def compose(self):
            # Textual's compose, with the search box swapped (CommandPalette finds it by type)
            with Vertical(id="--container"):
                with Horizontal(id="--input"):
                    yield SearchIcon()
                    yield SafeCommandInput(placeholder=self._placeholder, select_on_focus=False)
                    if not self.run_on_select:
                        yield Button("\u25b6")
                with Vertical(id="--results"):
                    yield CommandList()
                    yield LoadingIndicator()
            # its own keys at the bottom: the console's footer showed through, offering "esc Log"
            # while escape closes the palette
            yield Footer()

    return SafeCommandPalette(**kwargs)
