"""The console's footer: Textual's, but a key that does not fit is left out whole, never cut.

Textual's Footer lays its keys in one row and lets the last ones run under the palette key: at 80
columns the Decision log's footer ended in "f2 Catalog  q▏" or, with a fallback running, "f1 Help
f▏". Every key is still in the help (F1) and the palette.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class FittedFooter(Footer):
    def compose(self) -> ComposeResult:
        yield from super().compose()
        self.call_after_refresh(self._leave_out_cut_keys)

    def on_resize(self) -> None:
        for key in self.query(FooterKey):
            key.display = True  # a wider terminal has room again: measure anew
        self.call_after_refresh(self._leave_out_cut_keys)

    def _leave_out_cut_keys(self) -> None:
        keys = [key for key in self.query(FooterKey) if not key.has_class("-command-palette")]
        palette = [key for key in self.query(FooterKey) if key.has_class("-command-palette")]
        limit = min([key.region.x for key in palette if key.region.width] + [self.region.right])
        cut = False
        for key in keys:
            cut = cut or key.region.right > limit
            if cut:
                key.display = False
