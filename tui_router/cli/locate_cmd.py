"""`tui-router locate config|sessions|catalogs`: where things are."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("locate", help="print where config, sessions or catalogs are", description="Print where things are.")
    parser.add_argument("what", choices=["config", "sessions", "catalogs"])
    parser.add_argument("--config", metavar="PATH", default=argparse.SUPPRESS, help="config file")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..config import find_config_file, load_config, user_config_path
    from ..resources import bundled_catalogs, data_dir

    if args.what == "config":
        found = find_config_file(getattr(args, "config", None))
        print(found.resolve() if found else f"{user_config_path()} (not present; built-in defaults in use)")
    elif args.what == "sessions":
        print(load_config(getattr(args, "config", None)).sessions_path.resolve())
    else:
        print(data_dir("catalogs").resolve())
        for name, path in bundled_catalogs().items():
            print(f"  {name}: {path}")
    return 0
