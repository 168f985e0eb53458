"""A Static that skips the (screen-wide) layout pass when new content keeps the same height.

A layout pass re-arranges and repaints the whole screen (tens of ms at 120x40); a repaint of the
widget alone is enough when its height does not change. Inside a scrolling pane the widget has
`min-height: 100%` (app.tcss), so any content shorter than the pane keeps the same height.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class PaneText(Static):
    _lines: int | None = None
    _lines_width: int | None = None  # the width `_lines` was counted at

    def set_content(self, content: Content) -> None:
        width = self.content_region.width
        lines = len(content.wrap(width)) if width else None
        floor = self.styles.min_height and self.parent is not None and getattr(self.parent, "scrollable_content_region", None)
        visible = self.parent.scrollable_content_region.height if floor else 0  # type: ignore[union-attr]
        # The old content's height counts only at the width it was measured at: after a resize the
        # old text may wrap to more lines than it did (the header, one line at 120 columns, is two at
        # 80 until it is replaced by its short form, which then kept the two lines: a blank line).
        same = (
            lines is not None
            and self._lines is not None
            and self._lines_width == width
            and max(lines, visible) == max(self._lines, visible)
        )
        self._lines, self._lines_width = lines, width
        self.update(content, layout=not same)
