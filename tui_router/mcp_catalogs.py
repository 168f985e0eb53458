"""Several catalogs from one `mcp-serve`: per-team allowlists behind one server.

`mcp-serve --serve-catalog NAME=PATH` (repeated) serves each catalog with its own router: over HTTP
each at `/mcp/NAME` (a client picks its allowlist by the URL it is given), over stdio the one
`--use NAME` picks (a client's launch command names it). Each catalog's turns go to its own live
session files, in `<sessions>/NAME/`, so a team's traffic is labelled against its own catalog.

A path that names no catalog (`/mcp`, `/mcp/other`) gets HTTP 404 with a JSON-RPC error naming the
catalogs served: a client is never routed against another team's allowlist by default.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .mcp_server import MCPServeError

if TYPE_CHECKING:
    from .config import Config
    from .mcp_server import ToolSearch

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_CATALOGS = 64


class ServedCatalog:
    def __init__(self, name: str, search: ToolSearch, folder: Path) -> None:
        self.name = name
        self.search = search
        self.folder = folder

    @property
    def path(self) -> str:
        return f"/mcp/{self.name}"


def parse_served(pairs: list[str]) -> list[tuple[str, str]]:
    """`--serve-catalog NAME=PATH` pairs, in order; a name is the URL path part and the live folder."""
    out: list[tuple[str, str]] = []
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not path:
            raise MCPServeError(f"--serve-catalog {pair!r}: give a name and a catalog, e.g. --serve-catalog support=catalogs/support.toml")
        if not NAME_PATTERN.fullmatch(name):
            raise MCPServeError(f"--serve-catalog {pair!r}: a name is lowercase letters, digits, _ and - (it becomes the path /mcp/NAME and a folder)")
        if any(name == other for other, _ in out):
            raise MCPServeError(f"--serve-catalog: the name '{name}' is given twice")
        out.append((name, path))
    if len(out) > MAX_CATALOGS:
        raise MCPServeError(f"--serve-catalog: {len(out)} catalogs, past the {MAX_CATALOGS} one server takes")
    return out


def build_served(config: Config, pairs: list[tuple[str, str]], folder: Path, *, record: bool, max_bytes: int | None, warn: Callable[[str], None]) -> list[ServedCatalog]:
    """A router, and a live writer in `folder/NAME` when recording, for each catalog."""
    from .catalog import load_catalog
    from .live import DEFAULT_MAX_BYTES, LiveSessionWriter
    from .mcp_server import ToolSearch, _check_folder
    from .route import build_router

    served: list[ServedCatalog] = []
    for name, spec in pairs:
        catalog = load_catalog(spec)
        router = build_router(config, catalog=catalog)
        for warning in catalog.warnings:
            warn(f"{name}: {warning}")
        warn(router.backend.cache_problem())
        writer = None
        own = folder / name
        if record:
            _check_folder(own)
            writer = LiveSessionWriter(own, catalog=catalog.name, backend=router.backend.name, model=router.backend.model, max_bytes=max_bytes or DEFAULT_MAX_BYTES)
        served.append(ServedCatalog(name, ToolSearch(router, writer), own))
    return served


def multi_app(served: list[ServedCatalog]) -> Any:
    """One ASGI app: each catalog's MCP endpoint at /mcp/NAME, every session manager run in one lifespan."""
    import contextlib
    import json

    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    from .mcp_server import build_server

    apps = [build_server(s.search).streamable_http_app(host="127.0.0.1", json_response=True, streamable_http_path=s.path) for s in served]
    paths = ", ".join(s.path for s in served)

    async def no_catalog(request: Any) -> Response:
        where = request.url.path[:80]
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": f"no catalog is served at {where}; this server has {paths}"}}
        return Response(json.dumps(body), status_code=404, media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        async with contextlib.AsyncExitStack() as stack:
            for app in apps:
                await stack.enter_async_context(app.router.lifespan_context(app))
            yield

    routes = [route for app in apps for route in app.routes]
    methods = ["GET", "POST", "DELETE", "PUT", "PATCH"]
    routes += [Route("/mcp", no_catalog, methods=methods), Route("/mcp/{rest:path}", no_catalog, methods=methods)]
    return Starlette(routes=routes, lifespan=lifespan)


async def serve_many(served: list[ServedCatalog], *, http_port: int, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve every catalog over HTTP until interrupted; each writer's turns are written before return."""
    import anyio

    from .mcp_server import _final_write, _log_lines, _serve_http, _Wake, _write_loop

    writers = [s.search.writer for s in served if s.search.writer is not None]
    with _log_lines():
        try:
            async with anyio.create_task_group() as tg:
                for writer in writers:
                    wake = _Wake()
                    writer.on_append = wake.set
                    tg.start_soon(_write_loop, writer, wake)
                await _serve_http(None, http_port, on_ready, app=multi_app(served), path="/mcp/")
                tg.cancel_scope.cancel()
        finally:
            lost = 0
            for writer in writers:
                lost += _final_write(writer)


def run_many(served: list[ServedCatalog], *, http_port: int) -> int:
    """`mcp-serve --serve-catalog ... --http PORT`."""
    try:
        import anyio
        import mcp  # noqa: F401
    except ImportError:
        from .mcp_server import INSTALL_HINT

        raise MCPServeError(INSTALL_HINT) from None

    def ready(where: str) -> None:
        listed = "; ".join(f"{where}{s.name} (catalog {s.search.catalog.name}, {len(s.search.catalog.tools)} options)" for s in served)
        target = "turns go to " + ", ".join(f"{s.folder}/" for s in served) if served[0].search.writer else "turns are not recorded"
        backend = served[0].search.router.backend.name
        print(f"tui-router: MCP server ready for {len(served)} catalogs (backend {backend}): {listed}; {target}", file=sys.stderr, flush=True)

    try:
        anyio.run(lambda: serve_many(served, http_port=http_port, on_ready=ready))
    except KeyboardInterrupt:
        pass
    return 1 if any(s.search.writer is not None and s.search.writer.unwritten for s in served) else 0
