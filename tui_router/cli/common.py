"""Options shared by subcommands, and the one place that turns them into a Config."""

from __future__ import annotations

import argparse

from ..config import Config, load_config


def add_common(parser: argparse.ArgumentParser, *, routes: bool = True, server: bool = True) -> None:
    """--config/--catalog/--backend/--base-url, accepted after the subcommand too.

    A command that routes nothing (`routes=False`: models, doctor, queue) does not offer --catalog and
    --backend, and one that talks to no server (`server=False`: queue) not --base-url: its --help
    listed them and they did nothing."""
    parser.add_argument("--config", metavar="PATH", default=argparse.SUPPRESS, help="config file")
    if routes:
        parser.add_argument("--catalog", metavar="PATH", default=argparse.SUPPRESS, help="catalog file or bundled name")
        parser.add_argument("--backend", metavar="NAME", default=argparse.SUPPRESS, help="auto (default: semantic when installed, else local) | local | bm25 | systemone | semantic")
    if server:
        parser.add_argument("--base-url", metavar="URL", default=argparse.SUPPRESS, help="System One server, e.g. http://127.0.0.1:8787/v1 (overrides [systemone] base_url)")


def config_from_args(args: argparse.Namespace) -> Config:
    return apply_args(load_config(getattr(args, "config", None)), args)


def apply_args(config: Config, args: argparse.Namespace) -> Config:
    """The config with --catalog/--backend/--base-url applied (the console applies them again to a
    config file it reloads: the command line keeps winning over the file)."""
    updates = {}
    if getattr(args, "catalog", None):
        # a command-line path is relative to the working directory, not to the config file
        import os
        from pathlib import Path

        from ..resources import bundled_catalogs

        value = args.catalog
        updates["catalog"] = value if value in bundled_catalogs() and not Path(value).exists() else os.path.abspath(value)  # not resolve(): it raises on a symlink loop
    if getattr(args, "backend", None):
        from ..decide import BACKENDS
        from ..errors import ConfigError, did_you_mean

        if args.backend not in BACKENDS:
            raise ConfigError(f"unknown backend '{args.backend}'{did_you_mean(args.backend, BACKENDS)}; use one of {', '.join(BACKENDS)}")
        updates["backend"] = args.backend
    if getattr(args, "base_url", None):
        from ..config import SystemOneConfig, has_userinfo
        from ..errors import ConfigError

        try:  # validated like the config value
            updates["systemone"] = SystemOneConfig.model_validate(config.systemone.model_dump() | {"base_url": args.base_url})
        except ValueError:
            if has_userinfo(args.base_url):  # the value is not echoed: it holds a secret
                raise ConfigError(
                    "--base-url must not carry a user name or password (user:password@host); "
                    "put the key in the environment variable named by [systemone] api_key_env"
                ) from None
            raise ConfigError(f"--base-url {args.base_url!r} is not an http:// or https:// URL (e.g. http://127.0.0.1:8787/v1)") from None
    return config.model_copy(update=updates) if updates else config


def warn_cache_problems(*problems: str) -> None:
    """The embedding cache fails soft (vectors kept in memory, the results stand), so a command says
    why on stderr, once however many routers it built: otherwise the next run embeds it all again
    with no word why. The same sentence everywhere (route, eval, replay, calibrate, mcp-serve)."""
    import sys

    for problem in dict.fromkeys(p for p in problems if p):
        print(f"tui-router: warning: {problem}", file=sys.stderr, flush=True)


def note_copies(notes: list[str]) -> None:
    """One stderr line per session file that repeats another's whole turn list (session.copy_notes)."""
    import sys

    for note in notes:
        print(f"tui-router: note: {note}", file=sys.stderr, flush=True)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
