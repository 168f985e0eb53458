"""Where long work reports its progress: one hook, set by whoever shows it (the CLI on a terminal).

No imports beyond the standard library, so setting the hook costs nothing at start-up.
"""

from __future__ import annotations

from collections.abc import Callable

# (done, total): (0, total) when a run starts, then after each step.
ProgressHook = Callable[[int, int], None]
_hook: ProgressHook | None = None


def set_progress_hook(hook: ProgressHook | None) -> ProgressHook | None:
    """Install `hook` (None: none); returns the previous one so a caller can restore it."""
    global _hook
    previous, _hook = _hook, hook
    return previous


def progress_hook() -> ProgressHook | None:
    return _hook
