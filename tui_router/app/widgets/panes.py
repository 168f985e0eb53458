"""Pane containers that Maximize (palette, or f10) fills the screen with, as a whole.

Textual maximizes the focused widget, or its nearest ancestor that allows it; its containers do
not. So Maximize did nothing on the Candidates and Distribution panes (focused scroll containers)
and, in the Decision log, filled the screen with the rows alone: no column header, no turn detail.
"""

from __future__ import annotations

from textual.containers import Vertical, VerticalScroll


class Pane(Vertical):
    ALLOW_MAXIMIZE = True


class ScrollPane(VerticalScroll):
    ALLOW_MAXIMIZE = True
