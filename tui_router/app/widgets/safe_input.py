"""A text box that never draws a control character: every Input of the console is one."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.widgets import Input
from textual.widgets.input import Selection

from ...textsafe import symbols
from ..format import _graphemes, grapheme_stops, is_emoji_cluster
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
        # by grapheme, as the cells are drawn: per code point a ZWJ family (2 cells) counted 8
        offset += self.scroll_offset.x
        cell = 0
        shown = symbols(self.value)
        index = 0
        for grapheme, width in _graphemes(shown):
            if cell <= offset < cell + width:
                return index
            cell += width
            index += len(grapheme)
        return len(shown)

    # The cursor steps over whole graphemes: by code point it stopped inside a flag (between its two
    # regional indicators), an emoji sequence or a letter and its accent, drawn mid-glyph, and what
    # was typed there split the flag in two.
    def _step(self, position: int, direction: int) -> int:
        stops = grapheme_stops(self.value)
        if direction < 0:
            return max([s for s in stops if s < position], default=0)
        return min([s for s in stops if s > position], default=len(self.value))

    def action_cursor_left(self, select: bool = False) -> None:
        start, end = self.selection
        if select:
            self.selection = Selection(start, self._step(end, -1))
        elif self.selection.is_empty:
            self.cursor_position = self._step(self.cursor_position, -1)
        else:
            self.cursor_position = min(start, end)

    def action_cursor_right(self, select: bool = False) -> None:
        start, end = self.selection
        if select:
            self.selection = Selection(start, self._step(end, 1))
        elif self.selection.is_empty and not (self.cursor_at_end and self._suggestion):
            self.cursor_position = self._step(self.cursor_position, 1)
        else:
            super().action_cursor_right()

    def action_delete_right(self) -> None:
        if self.selection.is_empty:
            self.delete(self.cursor_position, self._step(self.cursor_position, 1))
        else:
            self.delete_selection()

    def action_delete_left(self) -> None:
        position = self.cursor_position
        if self.selection.is_empty and position > 0:
            start = self._step(position, -1)
            # an emoji or a flag goes whole; a letter with marks loses one code point (its last mark)
            self.delete(start if is_emoji_cluster(self.value[start:position]) else position - 1, position)
        else:
            super().action_delete_left()

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
