"""Progress of long work on stderr, for a person watching a terminal.

A first start of the semantic backend on a large catalog embeds its texts for minutes; the CLI
draws one self-rewriting line on stderr meanwhile. Only when stderr is a terminal (a log file or a
pipe gets nothing), and never while the console owns the screen (Textual redirects sys.stderr then).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

MIN_INTERVAL = 0.25  # seconds between redraws


class EmbeddingProgress:
    """The progress hook that draws `tui-router: embedding N texts ... done/total (p%)`."""

    def __init__(self, stream: TextIO, owner: object) -> None:
        self.stream = stream  # the real stderr: its \\r must act, so it bypasses VisibleStream
        self.owner = owner  # what sys.stderr is while nobody else (Textual) has taken it over
        self.lock = threading.Lock()
        self.started = 0.0
        self.drawn = 0.0

    def __call__(self, done: int, total: int) -> None:
        if sys.stderr is not self.owner:
            return
        with self.lock:
            now = time.monotonic()
            if done == 0:
                self.started, self.drawn = now, 0.0
            elif done < total and now - self.drawn < MIN_INTERVAL:
                return
            self.drawn = now
            line = f"\rtui-router: embedding {total} texts (a first start; cached afterwards): {done}/{total} ({100 * done // total}%)"
            if done >= total:
                line += f" in {now - self.started:.0f} s\n"
            try:
                self.stream.write(line)
                self.stream.flush()
            except (OSError, ValueError):
                pass  # a closed terminal must not fail the work


def install(stderr: TextIO, owner: object):
    """Report embedding progress on `stderr` when it is a terminal; returns what to restore."""
    from ..progress import set_progress_hook

    try:
        tty = stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    return set_progress_hook(EmbeddingProgress(stderr, owner) if tty else None)
