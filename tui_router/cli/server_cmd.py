"""`tui-router models` and `tui-router doctor`: what a System One server serves and how it behaves."""

from __future__ import annotations

import argparse
import json
import os

from .common import add_common, config_from_args


def register(sub: argparse._SubParsersAction) -> None:
    models = sub.add_parser("models", help="list the models a System One server serves", description="List GET {base_url}/models of the configured System One server.")
    models.add_argument("--json", action="store_true", help="print the list as JSON")
    add_common(models, routes=False)
    models.set_defaults(handler=run_models)

    doctor = sub.add_parser(
        "doctor",
        help="probe a System One server and print its profile",
        description="Probe the configured System One server (models, model alias, largest option count, answer "
        "consistency, confidence definition), print the profile as a table and cache it for two-stage sizing. "
        "Exit 0 when the server is usable, 1 when a check failed, 2 when it cannot be reached.",
    )
    doctor.add_argument("--json", action="store_true", help="print the profile as JSON")
    add_common(doctor, routes=False)
    doctor.set_defaults(handler=run_doctor)


def _client(args: argparse.Namespace):
    from ..decide.systemone import SystemOneClient

    config = config_from_args(args)
    return config, SystemOneClient(config.systemone)


def run_models(args: argparse.Namespace) -> int:
    import asyncio

    from ..decide.systemone import list_models

    _, client = _client(args)

    async def fetch():
        try:
            return await list_models(client)
        finally:
            await client.aclose()

    models = asyncio.run(fetch())
    if args.json:
        print(json.dumps([m.model_dump() for m in models], ensure_ascii=False))
        return 0
    if not models:
        print(f"{client.shown_url}/models lists no models")
        return 0
    from ..app.format import cells, pad
    from ..textsafe import as_printed

    names = [as_printed(m.name) for m in models]  # measured as printed: escapes are wider
    width = max(cells(n) for n in names)
    for name, m in zip(names, models, strict=True):
        extra = "  ".join(part for part in (m.release_date, m.description) if part)
        print(f"{pad(name, width)}  {extra}".rstrip())
    return 0


def run_doctor(args: argparse.Namespace) -> int:
    import asyncio

    from ..decide.systemone import ProfileCache, ServerError, probe_server

    config, client = _client(args)
    cfg = config.systemone

    async def probe():
        try:
            return await probe_server(client, cfg.model)
        finally:
            await client.aclose()

    profile = asyncio.run(probe())
    if not profile.reachable:
        raise ServerError(profile.models_note or profile.alias_note or f"{client.shown_url}: the server cannot be reached")
    cached = ProfileCache.default().save(profile) if profile.complete else None
    if args.json:
        print(json.dumps(profile.model_dump() | {"routing_max_options": profile.option_limit(cfg.max_options)}, ensure_ascii=False))
        return 0 if profile.usable else 1
    key_state = "set" if os.environ.get(cfg.api_key_env, "").strip() else "not set (no Authorization header sent)"
    if client.key_problem():
        key_state = "set, but not sent: it holds a character an HTTP header cannot carry"
    rows = [("API key", f"${cfg.api_key_env}", key_state), *profile.rows(cfg.max_options)]
    print(f"System One server profile: {profile.base_url}, model {cfg.model}")
    print(format_table(("check", "result", "detail"), rows))
    if cached:
        print(f"cached in {cached}")
    return 0 if profile.usable else 1


def format_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Columns padded to terminal cells (a server's model name or error in CJK is two a character),
    measured on the text as printed (control characters as escapes)."""
    from ..app.format import cells, pad
    from ..textsafe import as_printed

    shown = [[as_printed(c) for c in row] for row in [header, *rows]]
    widths = [max(cells(r[i]) for r in shown) for i in range(len(header) - 1)]
    lines = []
    for row in shown:
        padded = [pad(c, w) for c, w in zip(row, widths, strict=False)] + [row[-1]]
        lines.append("  ".join(padded).rstrip())
    return "\n".join(lines)
