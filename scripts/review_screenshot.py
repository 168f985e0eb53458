"""Save the README's screenshot of the review queue: docs/review-queue.svg.

    python scripts/review_screenshot.py [DIR]

Two sessions of real decisions (the local backend on the demo catalog, no network) are written to
a temporary folder, unlabelled; the console opens on their review queue at 120x40, one turn is
labelled with `1` and one accepted with `a`, and the screen is saved as an SVG.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui_router.config import Config  # noqa: E402
from tui_router.route import build_router  # noqa: E402
from tui_router.session import Session, SessionInfo, Turn, save_session  # noqa: E402

SESSIONS = {
    "monday-ops": [
        "book a meeting with Anna tomorrow at 10",
        "grant bob access to the payments repo",
        "can you check whether the deploy went out",
        "what's the weather on mars?",
    ],
    "tuesday-support": [
        "Text Jordan that the deploy finished",
        "refund the last order for customer 4411",
        "remind the team about the retro",
        "find the doc about rotating keys",
    ],
}


async def shoot(folder: Path) -> Path:
    from datetime import UTC, datetime

    from tui_router.app.app import RouterConsole
    from tui_router.review import Review

    work = Path(tempfile.mkdtemp(prefix="review-shot-"))
    config = Config(sessions_dir=str(work), backend="local")
    router = build_router(config)
    files = []
    for name, messages in SESSIONS.items():
        turns = [Turn(message=m, decision=router.route(m).to_turn_decision()) for m in messages]
        files.append(save_session(Session(session=SessionInfo(id=name, catalog=router.catalog.name), turns=turns), work / f"{name}.toml"))
    review = Review.of_files(files, reviewer="dana")
    app = RouterConsole(config, review=review, clock=lambda: datetime(2026, 11, 30, 10, 4, 12, tzinfo=UTC), session_id="review-shot")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("1", "a")
        await app.workers.wait_for_complete()
        app.clear_notifications()
        await pilot.pause()
        folder.mkdir(parents=True, exist_ok=True)
        app.save_screenshot("review-queue.svg", path=str(folder))
    return folder / "review-queue.svg"


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs"
    print(f"saved {asyncio.run(shoot(folder))}")


if __name__ == "__main__":
    main()
