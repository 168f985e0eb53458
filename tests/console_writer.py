"""A console in its own process for the locking tests: the real RouterConsole (driven by Pilot,
since tests have no terminal), opening a session file the way `tui-router open` does.

python console_writer.py FOLDER TAG N [--file F] [--session-id ID] [--wait]
  --file: continue F (claimed before it is read, as run_console does); else a new session
  --wait: print "ready" once the file is claimed, then wait for a line on stdin before routing
Prints one sentence and exits 2 when the file cannot be opened (as the CLI does).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("tag")
    parser.add_argument("n", type=int)
    parser.add_argument("--file", type=Path)
    parser.add_argument("--session-id")
    parser.add_argument("--wait", action="store_true")
    args = parser.parse_args()

    from app_harness import settle, submit

    from tui_router.app.app import RouterConsole
    from tui_router.config import config_from_dict
    from tui_router.errors import UserError
    from tui_router.session import load_session
    from tui_router.storage import claim_session_file

    config = config_from_dict(
        {"catalog": str(args.folder / "tiny.toml"), "backend": "local", "sessions_dir": str(args.folder / "sessions")}
    )
    session = None
    try:
        if args.file:
            claim_session_file(args.file)
            session = load_session(args.file)
    except UserError as exc:
        print(f"tui-router: {exc}", file=sys.stderr)
        return 2
    print("ready", flush=True)
    if args.wait:
        sys.stdin.readline()
    app = RouterConsole(config, session=session, session_id=args.session_id)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.set_thresholds(1.0, 1.0)  # every turn low: no confirm dialog to answer
        for i in range(args.n):
            await submit(app, pilot, f"remind me to call the dentist tomorrow ({args.tag} {i})")
        print(app.session.path, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
