"""Property tests: untrusted text made safe for the terminal (textsafe.py, app/format.shorten).

For any string: what is shown has no C0/C1 control character, no ESC, no DEL and no bidi control
(newline and tab only where layout keeps them), text that was already safe is shown unchanged, the
escaping is idempotent, and Rich markup in the input is shown literally when the text is rendered
the way the console renders it (a Text / Content, never markup). Data output (JSON/TOML) escaped
for the terminal still reads back as the same value.
"""

from __future__ import annotations

import io
import json
import re
import tomllib

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from textual.content import Content

from tui_router import tomlio
from tui_router.app.format import shorten
from tui_router.textsafe import NAME_MAX, VisibleStream, bounded_name, escape_for_data, is_safe, visible

# What a terminal may act on: C0 (but newline and tab), DEL, C1, and the bidi/line-separator set.
ACTS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
ACTS_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")

MARKUP = ["[bold]x[/]", "[/]", "[red on blue]", "[link=https://evil.example]click[/link]", "[@click=app.quit]q[/]",
          "\\[escaped]", "[", "]", "[[", ":smile:", "$"]
hostile = st.lists(
    st.one_of(
        st.text(max_size=20),
        st.sampled_from(MARKUP),
        st.text(alphabet=st.characters(categories=["Cc", "Cf", "Zl", "Zp", "Mn"]), max_size=10),
        st.sampled_from(["\x1b[2J", "\x1b]0;PWNED\x07", "\x9b31m", "\x1bP+q\x1b\\", "\r\n", "\u202eevil", "\U0001f600", "中文"]),
    ),
    max_size=8,
).map("".join)

FUZZ = settings(max_examples=300, deadline=None)


@FUZZ
@given(text=hostile)
def test_visible_leaves_nothing_a_terminal_acts_on(text: str) -> None:
    shown = visible(text)
    assert ACTS.search(shown) is None
    assert "\x1b" not in shown
    assert is_safe(shown)
    assert visible(shown) == shown  # idempotent
    one = visible(text, single_line=True)
    assert ACTS_ONE_LINE.search(one) is None and "\n" not in one and "\t" not in one
    if is_safe(text):
        assert shown == text  # safe text is shown as it is
    # every character survives, as itself or as its escape
    assert len(shown) >= len(text)


@FUZZ
@given(text=st.one_of(hostile, hostile.map(lambda t: t * 400)), limit=st.sampled_from([NAME_MAX, 1, 2, 40]))
def test_a_bounded_name_is_one_clean_line_within_the_limit(text: str, limit: int) -> None:
    name = bounded_name(text, limit)
    assert ACTS_ONE_LINE.search(name) is None and len(name) <= limit
    assert bounded_name(name, limit) == name  # idempotent: a file read back and saved again keeps it
    kept = " ".join(ACTS_ONE_LINE.sub(" ", text).split())
    if len(kept) <= limit:
        assert name == kept  # a sane name is stored as it is
    else:
        assert name.endswith("…") and name[:-1] == kept[: limit - 1]  # the cut shows


@FUZZ
@given(text=hostile, width=st.integers(0, 120))
def test_shorten_gives_one_safe_line_within_the_width(text: str, width: int) -> None:
    line = shorten(text, width)
    assert ACTS_ONE_LINE.search(line) is None
    assert "\n" not in line
    assert cell_len(line) <= max(width, 0)


def rendered(renderable: Text) -> str:
    out = io.StringIO()
    console = Console(file=out, width=100_000, color_system=None, legacy_windows=False, emoji=False, highlight=False)
    console.print(renderable, end="", soft_wrap=True)
    return out.getvalue()


@FUZZ
@given(text=hostile)
def test_markup_in_untrusted_text_is_shown_literally(text: str) -> None:
    shown = visible(text, single_line=True)
    # how the console builds what it shows: Content / Text of the visible text, never from_markup
    assert Content(shown).plain == shown
    assert rendered(Text(shown)) == shown
    for tag in MARKUP:
        if tag in shown:
            assert tag in rendered(Text(shown))


@FUZZ
@given(value=st.text(max_size=40) | hostile)
def test_data_escaping_keeps_json_and_toml_equal_and_safe(value: str) -> None:
    doc = {"message": value, "nested": {"list": [value, "x"]}}
    as_json = escape_for_data(json.dumps(doc, ensure_ascii=False))
    assert is_safe(as_json)
    assert json.loads(as_json) == doc
    as_toml = escape_for_data(tomlio.dumps(doc))  # the session writer's TOML
    assert is_safe(as_toml)
    assert tomllib.loads(as_toml) == doc


@FUZZ
@given(chunks=st.lists(hostile, max_size=5))
def test_the_visible_stream_escapes_whatever_is_written_in_any_pieces(chunks: list[str]) -> None:
    out = io.StringIO()
    stream = VisibleStream(out)
    for chunk in chunks:
        assert stream.write(chunk) == len(chunk)
    assert out.getvalue() == visible("".join(chunks))
    assert ACTS.search(out.getvalue()) is None
