"""The header line: catalog, backend and model, thresholds, session file with a saved/unsaved mark."""

from __future__ import annotations

from dataclasses import dataclass, replace

from textual.content import Content

from ...textsafe import visible
from .text import PaneText


@dataclass
class Status:
    catalog: str = "…"
    options: int | None = None
    backend: str = "…"
    model: str = ""
    high: float = 0.75
    medium: float = 0.45
    formula: str = "reference"
    session: str = ""
    saved: bool | None = None  # None: nothing to save yet
    loading: str = ""
    mode: str = ""  # "replay" in replay mode

    def render(self, width: int = 200) -> Content:
        """The longest form that fits on one line, else the compact one (which may wrap, by word)."""
        sep = (" │ ", "$text-muted")
        full = self.render_full(sep)
        if full.cell_length <= width - 2:
            return full
        long_thresholds = f"high ≥ {self.high:g} · medium ≥ {self.medium:g}"
        short_thresholds = f"≥{self.high:g}/≥{self.medium:g}"
        model = self.model
        short_model = model.split(" (", 1)[0]  # "semantic-e5-hybrid-3 (multilingual-e5-…)": the name
        variants = (
            (long_thresholds, True, model),
            (short_thresholds, True, model),
            (short_thresholds, True, short_model),
            (short_thresholds, False, short_model),
        )
        for thresholds, name, shown_model in variants:
            compact = self.render_compact(sep, thresholds, name, shown_model)
            if compact.cell_length <= width - 2:
                return compact
        # One line always (issue 13): the session path gives way from the left ("…/sessions/x.toml").
        # Cut in terminal cells: a path or catalog named in CJK is two cells a character, and cut by
        # characters the line still wrapped.
        from ..format import cells, shorten, shorten_start

        plain = self.render_compact(sep, short_thresholds, False, short_model)
        full_session = self.session or "new"
        room = width - 2 - (plain.cell_length - cells(full_session))
        if room >= 12:
            return replace(self, session=shorten_start(full_session, room)).render_compact(sep, short_thresholds, False, short_model)
        last = replace(self, session=shorten_start(full_session, 12), model="")
        line = last.render_compact(sep, short_thresholds, False, "")
        over = line.cell_length - (width - 2)
        if over > 0:  # a long catalog name gives way too
            line = replace(last, catalog=shorten(self.catalog, max(8, cells(self.catalog) - over))).render_compact(sep, short_thresholds, False, "")
        return line

    def render_full(self, sep: tuple[str, str]) -> Content:
        catalog = self.catalog + (f" ({self.options} options)" if self.options is not None else "")
        backend = self.backend + (f" · {self.model}" if self.model else "")
        parts: list[str | tuple[str, str] | Content] = [
            ("tui-router", "bold $text-accent"),
            sep,
            ("catalog ", "$text-muted"),
            catalog,
            sep,
            ("backend ", "$text-muted"),
            backend,
            sep,
            (f"high ≥ {self.high:g} · medium ≥ {self.medium:g}", ""),
            sep,
        ]
        if self.mode:
            parts.append((self.mode + " ", "bold $warning"))
        if self.saved is None:
            parts += [("session ", "$text-muted"), self.session or "new", (" (new)", "$text-muted")]
        elif self.saved:
            parts += [("session ", "$text-muted"), self.session, (" (saved)", "$success")]
        else:
            parts += [("session ", "$text-muted"), self.session, (" (unsaved)", "bold $warning")]
        if self.loading:
            parts += [sep, (self.loading, "italic $warning")]
        return Content.assemble(*parts)

    def render_compact(self, sep: tuple[str, str], thresholds: str, name: bool, model: str) -> Content:
        """The same facts without the labels, so it fits on one line at 120 and two at 80."""
        catalog = self.catalog + (f" ({self.options})" if self.options is not None else "")
        parts: list[str | tuple[str, str] | Content] = [
            *((("tui-router", "bold $text-accent"), sep) if name else ()),
            catalog,
            sep,
            self.backend + (f" · {model}" if model else ""),
            sep,
            thresholds,
            sep,
        ]
        if self.mode:
            parts.append((self.mode + " ", "bold $warning"))
        parts.append(self.session or "new")
        if self.saved is None:
            parts.append((" (new)", "$text-muted"))
        elif self.saved:
            parts.append((" (saved)", "$success"))
        else:
            parts.append((" (unsaved)", "bold $warning"))
        if self.loading:
            parts += [sep, (self.loading, "italic $warning")]
        return Content.assemble(*parts)


class StatusLine(PaneText):
    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.status = Status()

    def set(self, **fields) -> None:
        for key, value in fields.items():  # names, models and paths come from files and servers
            setattr(self.status, key, visible(value, single_line=True) if isinstance(value, str) else value)
        self._redraw()

    def on_resize(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        content = self.status.render(self.app.size.width)
        shown = getattr(self, "_shown", None)
        if shown is None or not content.is_same(shown):  # an update costs a layout pass: skip no-ops
            self._shown = content
            self.set_content(content)
