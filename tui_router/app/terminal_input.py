"""The console's terminal input, as Textual's Linux driver reads it, made robust to two inputs.

1. A byte that is not UTF-8 (a paste from a Latin-1 terminal, a raw C1 byte): the driver decodes
   stdin as strict UTF-8 in its input thread, so UnicodeDecodeError killed the console.
2. ESC inside a bracketed paste (tmux and screen pass pasted escape codes through): Textual's parser
   reads it as the start of an escape sequence, then re-sends the characters after it as key
   presses, outside the paste: the text was scrambled, a newline among them pressed Enter and one
   paste became two turns. Inside a paste, ESC is handed over as PASTED_ESC, a noncharacter no
   terminal sends, which the text boxes turn back into ESC.

The driver looks its decoder up by the module-level name `getincrementaldecoder` when its input
thread starts; replacing that name is the smallest change that reaches the bytes before the parser.
"""

from __future__ import annotations

import codecs

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
PASTED_ESC = "\ufdd0"


def _marker_prefix(text: str, marker: str) -> int:
    """Length of the longest end of `text` that is a proper prefix of `marker` (a marker cut in two
    by the read boundary)."""
    for length in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-length:]):
            return length
    return 0


class PasteEscapes:
    """Decoded terminal input in, the same input out with every ESC inside a bracketed paste
    replaced by PASTED_ESC. Keeps its state across reads (a marker can arrive in pieces)."""

    def __init__(self) -> None:
        self.in_paste = False
        self.held = ""  # inside a paste: the start of what may be the end marker
        self.start_seen = ""  # outside: the start of what may be the start marker (already passed on)

    def __call__(self, text: str) -> str:
        data, self.held = self.held + text, ""
        out: list[str] = []
        i = 0
        if not self.in_paste and self.start_seen:
            seen = self.start_seen + data
            self.start_seen = ""
            if len(seen) < len(PASTE_START) and PASTE_START.startswith(seen):  # still only part of it
                self.start_seen = seen
                return data
            if seen.startswith(PASTE_START):
                i = len(PASTE_START) - (len(seen) - len(data))
                out.append(data[:i])
                self.in_paste = True
        while i < len(data):
            if self.in_paste:
                end = data.find(PASTE_END, i)
                if end < 0:
                    keep = _marker_prefix(data[i:], PASTE_END)
                    stop = len(data) - keep
                    out.append(data[i:stop].replace("\x1b", PASTED_ESC))
                    self.held = data[stop:]  # never a lone escape key: we are inside a paste
                    break
                out.append(data[i:end].replace("\x1b", PASTED_ESC))
                out.append(PASTE_END)
                i = end + len(PASTE_END)
                self.in_paste = False
            else:
                start = data.find(PASTE_START, i)
                if start < 0:
                    # passed on at once (a lone ESC is the escape key), remembered in case the
                    # marker continues in the next read
                    keep = _marker_prefix(data[i:], PASTE_START)
                    self.start_seen = data[len(data) - keep :] if keep else ""
                    out.append(data[i:])
                    break
                out.append(data[i : start + len(PASTE_START)])
                i = start + len(PASTE_START)
                self.in_paste = True
        return "".join(out)


class TerminalDecoder:
    """UTF-8 with undecodable bytes replaced (U+FFFD), then PasteEscapes."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._paste = PasteEscapes()

    def decode(self, data: bytes, final: bool = False) -> str:
        text = self._paste(self._decoder.decode(data, final))
        if final and self._paste.held:
            text, self._paste.held = text + self._paste.held, ""
        return text


def install() -> None:
    """Make Textual's Linux driver read the terminal through TerminalDecoder (nothing to do where
    that driver does not exist, e.g. Windows)."""
    try:
        from textual.drivers import linux_driver
    except ImportError:  # pragma: no cover - no termios on this platform
        return

    def decoder_class(encoding: str):
        return lambda: TerminalDecoder(encoding)

    linux_driver.getincrementaldecoder = decoder_class


def unescape_paste(text: str) -> str:
    """A pasted text with the ESC characters PasteEscapes set aside put back."""
    return text.replace(PASTED_ESC, "\x1b")
