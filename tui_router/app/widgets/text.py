"""A Static that skips the (screen-wide) layout pass when new content keeps the same height."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class PaneText(Static):
    _lines: int | None = None

    def set_content(self, content: Content) -> None:
        width = self.content_region.width
        lines = len(content.wrap(width)) if width else None
        same = lines is not None and lines == self._lines
        self._lines = lines
        # A layout pass re-arranges the whole screen (tens of ms); a repaint of this widget is enough
        # when the height did not change.
        self.update(content, layout=not same)
