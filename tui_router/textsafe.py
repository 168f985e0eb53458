"""Untrusted text made safe to show on a terminal.

Text from a user, a catalog, a session file, a server or a command may carry control characters
that a terminal acts on: `ESC ] 0 ; title BEL` retitles the window, `ESC [ 2 J` blanks it, a C1
CSI (U+009B) does the same on some terminals, bidi overrides reorder what is read. `visible()`
turns each into a printable escape (`\\x1b`, `\\x9b`, `\\u202e`) so it is seen, never acted on.
Every place that shows such text (console widgets and notifications, CLI text output and stderr)
goes through it; JSON output escapes control characters itself.
"""

from __future__ import annotations

import re

# C0 controls, DEL and C1 controls; newline and tab are kept (layout), carriage return is not
# (it rewrites the line it ends).
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f"
# Bidi embeddings, overrides and isolates, the implicit marks, and the line/paragraph separators
# that some terminals treat as newlines.
_FORMAT = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
# Surrogates: a JSON "\ud800" escape from a server or command reads as one, and no UTF-8 stream
# (stdout, a pipe, the terminal) can encode it: shown as its escape like a control character.
_SURROGATES = "\ud800-\udfff"
_UNSAFE = re.compile(f"[{_CONTROL}{_FORMAT}{_SURROGATES}]")
_UNSAFE_LINE = re.compile(f"[{_CONTROL}{_FORMAT}{_SURROGATES}\n\t]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, single_line: bool = False) -> str:
    """`text` with every control character shown as an escape (`\\x1b`), newline and tab kept
    unless `single_line`. Idempotent on its own output; a str subclass comes back as plain str."""
    pattern = _UNSAFE_LINE if single_line else _UNSAFE
    return pattern.sub(_escape, str(text))


def _symbol(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␛ for ESC, ␇ for BEL, ␉ for tab
    return "\u2421" if code == 0x7F else "\ufffd"  # ␡ for DEL; C1 and bidi controls have no picture


def symbols(text: str) -> str:
    """`text` with every control character (newline and tab too) drawn as one one-cell symbol, so
    a text box can show it while its cursor and selection still count characters of the original."""
    return _UNSAFE_LINE.sub(_symbol, str(text))


# A model name comes from a server's reply (or a session file written from one) and is stored in every
# turn and shown in the status bar: real names are well under 100 characters (an org/name id with a
# revision), so past this it is a server's junk, not a name.
NAME_MAX = 120


def bounded_name(text: str, limit: int = NAME_MAX) -> str:
    """A name from untrusted data as it is stored and shown: control characters (newline and tab too)
    taken out, each run of them and of spaces left as one space, cut to `limit` characters with a
    visible `…`. A space, not nothing: a server that echoes the API key with a control character
    in it (`sk-ab<BEL>cdef`, which the key's redaction does not match) must not get it spliced whole."""
    text = " ".join(_UNSAFE_LINE.sub(" ", str(text)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Characters that draw nothing besides whitespace: the Hangul fillers (letters by category, blank on screen).
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")


def is_blank(text: str) -> bool:
    """Whether `text` shows nothing: only whitespace, control characters and invisible format
    characters (zero-width space and joiners, bidi controls, the BOM, the soft hyphen). A message of
    U+200B alone passed `not text.strip()` and was routed as if it said something. Marks with no
    letter to sit on (variation selectors, combining accents alone) are blank too: retrieval folds
    them away and routed the empty rest."""
    import unicodedata

    return all(c.isspace() or c in _BLANK_LETTERS or unicodedata.category(c) in ("Cc", "Cf", "Mn", "Me") for c in text)


def is_safe(text: str) -> bool:
    """Whether `text` shows as it is (nothing `visible` would change)."""
    return _UNSAFE.search(text) is None


# For a JSON or TOML document the same characters are written as \\uXXXX, which both formats read
# back as the character itself inside a string (the only place they can occur in such output).
def escape_for_data(text: str) -> str:
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def utf_encoding(encoding: str | None) -> bool:
    import codecs

    if not encoding:
        return True  # a stream that takes str without saying how it stores it (StringIO)
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


def encodable(text: str, encoding: str | None, *, data: str | bool = False) -> str:
    """`text` with every character `encoding` cannot carry written as an escape, so a stream in
    ASCII or Latin-1 (PYTHONIOENCODING=ascii, LC_ALL=C without UTF-8 mode) never raises
    UnicodeEncodeError. Text shows `\\u8bf7`, `\\U0001f600` like `visible`; a JSON document gets
    `\\uXXXX` (a surrogate pair past U+FFFF), which reads back as the same character; a TOML
    document `\\UXXXXXXXX`, which TOML reads back (inside strings, the only place such characters
    occur in our documents)."""
    if text.isascii() or utf_encoding(encoding):
        return text
    try:
        text.encode(encoding)  # type: ignore[arg-type]
        return text
    except UnicodeEncodeError:
        pass
    out = []
    for char in text:
        try:
            char.encode(encoding)  # type: ignore[arg-type]
            out.append(char)
            continue
        except UnicodeEncodeError:
            pass
        code = ord(char)
        if code < 0x10000:
            out.append(f"\\u{code:04x}")
        elif data == "json":
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def as_printed(text: str, stream=None) -> str:
    """One table cell as `stream` (default: stdout) will show it: control characters and newlines
    as escapes, and characters its encoding cannot carry too, so a column is measured on what is
    printed (an ASCII stdout prints 请 as six cells, \\u8bf7)."""
    import sys

    target = sys.stdout if stream is None else stream
    return encodable(visible(str(text), single_line=True), getattr(target, "encoding", None))


class VisibleStream:
    """A text stream that shows what is written to it through `visible` (or, for a JSON/TOML
    document, `escape_for_data`): the CLI wraps stdout and stderr in it so no print site can
    let a control character reach the terminal. Characters the stream's encoding cannot carry
    are escaped too (`encodable`). `data` is False for text, "json" or "toml" for a document;
    `show=False` only does the encoding part (for rich, whose styling codes must reach the terminal)."""

    def __init__(self, stream, *, data: str | bool = False, show: bool = True) -> None:
        self.stream = stream
        self.data = data
        self.show = show

    def write(self, text: str) -> int:
        shown = text if not self.show else escape_for_data(text) if self.data else visible(text)
        self.stream.write(encodable(shown, getattr(self.stream, "encoding", None), data=self.data))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):  # flush, fileno, isatty, encoding, ...
        return getattr(self.stream, name)
