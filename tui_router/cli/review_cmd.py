"""`tui-router queue` (the unlabelled turns, least certain first) and `tui-router review` (label them
in the console). The queue logic is tui_router.review; Textual is imported only when review opens."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from .common import add_common, config_from_args, note_copies, positive_int


def register(sub: argparse._SubParsersAction) -> None:
    q = sub.add_parser(
        "queue",
        help="list unlabelled turns, least certain first",
        description="The unlabelled turns of the session files (or folders), least certain first: unresolved "
        "turns, then ascending margin between the two most probable options (the none option included); "
        "ties by file, then turn.",
    )
    q.add_argument("sessions", nargs="+", metavar="FILES", help="session files or folders of them")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.add_argument("--limit", type=positive_int, metavar="N", help="at most N turns")
    add_common(q, routes=False, server=False)
    q.set_defaults(handler=run_queue)

    r = sub.add_parser(
        "review",
        help="label the queued turns in the console",
        description="Open the console's review queue on the session files: 1-9 label with the n-th most probable "
        "option, a accept the choice, l pick any option, x clear, s skip, u undo, n/p next/previous. "
        "Each label is saved at once to its own file.",
    )
    r.add_argument("sessions", nargs="+", metavar="FILES", help="session files or folders of them")
    add_common(r)
    r.set_defaults(handler=run_review)


def run_queue(args: argparse.Namespace) -> int:
    from ..review import build_queue, load_sessions
    from ..session import copy_notes

    config_from_args(args)  # a bad --config is reported like everywhere else
    sessions = load_sessions(args.sessions)
    note_copies(copy_notes(sessions))
    queue = build_queue(sessions, args.limit)
    total = len(build_queue(sessions)) if args.limit else len(queue)
    if args.json:
        print(json.dumps({"files": [str(s.path) for s in sessions], "total": total, "queue": [e.to_json() for e in queue]}, ensure_ascii=False))
        return 0
    if not queue:
        print(f"queue: no unlabelled turns in {len(sessions)} file{'' if len(sessions) == 1 else 's'}")
        return 0
    print(f"queue: {total} unlabelled turn{'' if total == 1 else 's'} in {len(sessions)} file{'' if len(sessions) == 1 else 's'}, least certain first" + (f" (first {len(queue)})" if len(queue) < total else ""))
    from ..app.format import cells, one_line, pad, shorten, shorten_start
    from ..textsafe import as_printed

    rows = [("file", "turn", "margin", "band", "choice", "message")]
    for e in queue:
        rows.append((as_printed(one_line(str(e.file))), str(e.turn_number), "-" if e.margin is None else f"{e.margin:.3f}", e.band, e.choice or "-", e.message))
    widths = [max(cells(r[i]) for r in rows) for i in range(5)]  # terminal cells: a file name in CJK is two a character
    message_width = 60
    if sys.stdout.isatty():
        # on a terminal every row stays one line (at 80 columns each row wrapped in two): the file
        # column keeps the end of the name, where time-named files differ, and the message is cut
        columns = shutil.get_terminal_size().columns
        others = sum(widths[1:]) + 2 * 5
        widths[0] = min(widths[0], max(16, columns - others - 40))
        message_width = max(10, min(60, columns - others - widths[0]))
    for r in rows:
        shown = [shorten_start(r[0], widths[0]), *r[1:5]]
        print("  ".join(pad(cell, w, right=i == 2) for i, (cell, w) in enumerate(zip(shown, widths, strict=True))) + "  " + shorten(r[5], message_width))
    return 0


def run_review(args: argparse.Namespace) -> int:
    """The files are only listed here; the console reads them in a worker after its first frame
    (a folder of 20,000 turns took a second before anything was drawn)."""
    from ..review import session_files
    from ..session import is_live_file
    from .console_cmd import _check_catalog

    config = config_from_args(args)
    _check_catalog(config)
    files = session_files(args.sessions)  # none, or a name that is no file: one sentence, exit 2
    if all(is_live_file(file) for file in files):
        from ..errors import UserError
        from ..review import live_label_refusal

        raise UserError(live_label_refusal(files[0]))  # every label would be refused
    from functools import partial

    from ..app import run_review as open_review
    from .common import apply_args

    return open_review(config, files, command_line=partial(apply_args, args=args))
