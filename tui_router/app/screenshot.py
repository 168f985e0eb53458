"""The palette's "Screenshot", written whole or not at all.

Textual's own writer opens the file and streams into it: on a full disk it leaves a truncated .svg
and says only "Failed to save screenshot". Here the SVG goes through `session.create_text_file` (a temp
file, then the name only if it is free) and the operator reads where it went or why it did not.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path


def screenshot_target(folder: str | Path | None, filename: str | None, now: datetime | None = None) -> Path:
    """Where a screenshot goes: `folder` (default: the user's Downloads folder, as in Textual)."""
    if folder is None:
        from platformdirs import user_downloads_path

        folder = user_downloads_path()
    stamp = (now or datetime.now()).strftime("%Y-%m-%dT%H_%M_%S_%f")
    return Path(folder) / (filename or f"tui-router {stamp}.svg")


def save_screenshot(target: Path, svg: str) -> tuple[str, bool]:
    """Write the SVG (never over an existing file); the sentence to show and whether it worked."""
    from ..session import create_text_file

    try:
        create_text_file(target, svg)
    except FileExistsError:
        return f"Could not save the screenshot: {target} already exists (nothing was overwritten).", False
    except OSError as exc:
        return f"Could not save the screenshot {target} ({exc.strerror or exc}); nothing was written.", False
    return f"Screenshot saved to {target}.", True
