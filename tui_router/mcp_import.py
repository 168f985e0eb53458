"""Import a catalog from an MCP server: start it over stdio, call tools/list, write catalog TOML.

The official `mcp` SDK is an optional extra (`pip install 'tui-router[mcp]'`). The conversion itself
(`catalog_from_tools`) works on plain dicts, so it is testable without a server.

Every valid MCP tool becomes a catalog tool. A name that is not a valid option id is given a derived
id (its original name kept as the title) and reported, as are missing descriptions (a placeholder
the operator must replace) and schema values TOML cannot hold (null). A tool whose definition the
MCP SDK's Tool model refuses (a schema that is not an object, a description that is not a string)
is left out and named; the others are imported.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shlex
import tempfile
import unicodedata
from collections.abc import Iterator
from typing import Any

import tomli_w
from pydantic import BaseModel, ConfigDict

from . import tomlio
from .catalog import DEFAULT_NONE_OPTION, ID_PATTERN, Catalog, Risk, parse_catalog
from .errors import CatalogError, UserError
from .textsafe import visible

DEFAULT_TIMEOUT = 30.0
MAX_WHEN_TO_USE = 300
MAX_SHOWN_NAME = 80  # an MCP name quoted in a note or a header comment (a server may send 10,000 characters)
MAX_CATALOG_NAME = 64
# A schema sits 3 levels down in a catalog file (tools array, tool table, schema table) and the
# catalog reader refuses nesting past tomlio.MAX_DEPTH: a deeper schema would write a file that
# `catalog validate` rejects.
MAX_SCHEMA_DEPTH = tomlio.MAX_DEPTH - 3
INSTALL_HINT = "catalog import-mcp needs the MCP SDK, an optional extra: install it with pip install 'tui-router[mcp]'"


class MCPImportError(UserError):
    pass


class ImportResult(BaseModel):
    catalog: Catalog
    data: dict[str, Any]
    notes: list[str] = []  # one line per tool that needed attention
    renamed: dict[str, str] = {}  # MCP name -> catalog id
    skipped: list[str] = []  # one line per MCP tool left out: which tool, why (its definition is invalid)

    def toml(self, source: str = "") -> str:
        header = ["# Catalog imported from an MCP server by `tui-router catalog import-mcp`."]
        if source:
            header.append(f"# Server command: {_comment(source)}")
        if self.renamed:
            header.append("# MCP names that are not valid ids (catalog id <- MCP tool name):")
            header += [f"#   {new} <- {_comment(_shown(old))}" for old, new in self.renamed.items()]
        if self.notes:
            header.append("# Check before routing:")
            header += [f"#   {_comment(note)}" for note in self.notes if not note.startswith("renamed")]
        if self.skipped:
            header.append("# MCP tools left out (their definitions are invalid):")
            header += [f"#   {_comment(line)}" for line in self.skipped]
        # a server's JSON may escape a lone surrogate ("\\ud800"): U+FFFD, so stdout or --out can take it
        return tomlio.replace_surrogates("\n".join(header) + "\n\n" + tomli_w.dumps(self.data))


def check_loads_back(text: str) -> None:
    """The written text must load as the product loads a catalog file (size, nesting, finite
    numbers, TOML, catalog rules): what it cannot read is never written."""
    import tomllib

    size = len(text.encode("utf-8"))
    try:
        if size > tomlio.MAX_FILE_BYTES:
            raise ValueError(f"{size:,} bytes, past the {tomlio.MAX_FILE_BYTES:,} a catalog file may have")
        parse_catalog(tomlio.loads(text), "<imported catalog>")
    except (ValueError, tomllib.TOMLDecodeError) as exc:  # TOMLLimitError is a ValueError
        raise MCPImportError(f"the imported catalog would not load back ({_summary(exc)}); nothing was written") from None
    except CatalogError as exc:
        raise MCPImportError(f"the imported catalog would not load back ({'; '.join(exc.lines()[:2])}); nothing was written") from None


def _comment(text: str) -> str:
    """Server text in a one-line TOML comment: a newline in it would start TOML lines of its own
    (a table, a tool) and a control character makes the file unreadable."""
    return visible(text, single_line=True)


def _shown(name: str) -> str:
    return name if len(name) <= MAX_SHOWN_NAME else f"{name[:MAX_SHOWN_NAME]}… ({len(name):,} characters)"


# ---------------------------------------------------------------- conversion (no MCP needed)


def derive_id(name: str) -> str:
    """A valid option id for an MCP tool name: snake_case, ASCII, at most 64 characters."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    text = re.sub(r"[^a-z0-9_.:-]+", "_", text)
    text = re.sub(r"_{2,}", "_", text).strip("_.:-")
    if not text:
        text = "tool"
    elif not text[0].isalpha():
        text = f"tool_{text}"
    return text[:64].rstrip("_.:-")


def _unique(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    number = 2
    while True:
        suffix = f"_{number}"
        candidate = base[: 64 - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        number += 1


def _when_to_use(description: str) -> tuple[str, bool]:
    """First paragraph, whitespace collapsed, cut at a word near MAX_WHEN_TO_USE; (text, shortened)."""
    paragraph = re.split(r"\n\s*\n", description.strip(), maxsplit=1)[0]
    text = " ".join(paragraph.split())
    shortened = text != " ".join(description.split())
    if len(text) > MAX_WHEN_TO_USE:
        text = text[: MAX_WHEN_TO_USE - 1].rsplit(" ", 1)[0] + "…"
        shortened = True
    return text, shortened


def _without_nulls(value: Any, path: str, dropped: list[str]) -> Any:
    """TOML has no null: drop null values (reported), keep everything else as it is."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if item is None:
                dropped.append(f"{path}.{key}")
                continue
            out[str(key)] = _without_nulls(item, f"{path}.{key}", dropped)
        return out
    if isinstance(value, list):
        kept = []
        for index, item in enumerate(value):
            if item is None:
                dropped.append(f"{path}[{index}]")
                continue
            kept.append(_without_nulls(item, f"{path}[{index}]", dropped))
        return kept
    return value


def _depth(value: Any) -> int:
    """How deep arrays and objects nest below `value` (itself 0), walked without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                deepest = max(deepest, depth + 1)
                stack.append((child, depth + 1))
    return deepest


def _risk(annotations: dict[str, Any]) -> Risk:
    """From MCP tool annotations, with the spec's defaults (not read-only, open world) when absent."""
    if annotations.get("readOnlyHint") is True:
        return Risk.read
    if annotations.get("openWorldHint", True) is not False:
        return Risk.outbound
    return Risk.write


def catalog_from_tools(tools: list[dict[str, Any]], name: str, none_option: str = DEFAULT_NONE_OPTION) -> ImportResult:
    """Catalog data from MCP tool definitions (tools/list items as JSON dicts)."""
    from .arguments import schema_problem  # jsonschema only when importing

    if not tools:
        raise MCPImportError("the MCP server lists no tools; there is nothing to import")
    taken = {none_option}
    entries: list[dict[str, Any]] = []
    notes: list[str] = []
    renamed: dict[str, str] = {}
    for index, tool in enumerate(tools):
        raw_name = tool.get("name")
        mcp_name = raw_name if isinstance(raw_name, str) and raw_name else f"tool {index + 1}"
        if ID_PATTERN.fullmatch(mcp_name) and mcp_name not in taken:
            tool_id = mcp_name
        else:
            tool_id = _unique(derive_id(mcp_name), taken)
            why = "is not a valid id" if not ID_PATTERN.fullmatch(mcp_name) else "collides with another id"
            renamed[mcp_name] = tool_id
            notes.append(f"renamed: MCP tool {_shown(mcp_name)!r} {why}; its catalog id is {tool_id!r} (the MCP name is kept as its title)")
        taken.add(tool_id)

        description = tool.get("description") if isinstance(tool.get("description"), str) else ""
        when, shortened = _when_to_use(description or "")
        if not when:
            when = f"No description from the MCP server for {_shown(mcp_name)!r}; write when_to_use before routing to it."
            notes.append(f"{tool_id}: the MCP server gives no description; when_to_use is a placeholder to replace")
        elif shortened:
            notes.append(f"{tool_id}: when_to_use is the first {len(when)} characters of a longer description")

        annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
        entry: dict[str, Any] = {"id": tool_id, "when_to_use": when}
        title = tool.get("title") or annotations.get("title") or (mcp_name if tool_id != mcp_name else None)
        if isinstance(title, str) and title:
            entry["title"] = title
        entry["risk"] = _risk(annotations).value
        schema = tool.get("inputSchema", tool.get("input_schema"))
        if isinstance(schema, dict) and (depth := _depth(schema)) > MAX_SCHEMA_DEPTH:
            notes.append(f"{tool_id}: its schema nests {depth} levels deep, past the {MAX_SCHEMA_DEPTH} a catalog file holds; it was left out (write a flatter one)")
        elif isinstance(schema, dict):
            dropped: list[str] = []
            kept = _without_nulls(schema, "schema", dropped)
            if dropped:
                notes.append(f"{tool_id}: TOML cannot hold null; dropped {', '.join(dropped[:4])}" + (f" (+{len(dropped) - 4})" if len(dropped) > 4 else ""))
            if problem := schema_problem(kept):  # `catalog validate` would refuse the file
                shown = problem if len(problem) <= 200 else problem[:200] + "..."
                notes.append(f"{tool_id}: its schema is not valid JSON Schema ({shown}); it was left out")
            else:
                entry["schema"] = kept
        entries.append(entry)

    data: dict[str, Any] = {"name": name, "description": "Imported from an MCP server", "none_option": none_option, "tools": entries}
    try:
        catalog = parse_catalog(data, source=f"<mcp catalog {name}>")
    except CatalogError as exc:  # a bug in the conversion, not in the server: say what failed
        raise MCPImportError(f"the imported catalog is invalid: {'; '.join(exc.lines()[:3])}") from None
    return ImportResult(catalog=catalog, data=data, notes=notes, renamed=renamed)


# ---------------------------------------------------------------- talking to the server


def _stderr_tail(handle: Any, lines: int = 3) -> str:
    try:
        handle.seek(0)
        text = handle.read()
    except (OSError, ValueError):
        return ""
    tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    shown = " | ".join(tail)
    return f"; its stderr ends: {shown[-300:]}" if shown else ""


class ListedTools(BaseModel):
    """What a server's tools/list gave: the tools the SDK's own Tool model accepts (as JSON dicts)
    and one line per tool it refuses (which tool, why), so one bad tool does not sink the rest."""

    server_name: str | None = None
    tools: list[dict[str, Any]] = []
    skipped: list[str] = []


class _Page(BaseModel):
    """One tools/list result, read permissively: each tool is checked on its own."""

    model_config = ConfigDict(extra="ignore")
    tools: list[Any]
    nextCursor: str | None = None  # noqa: N815 (the wire name)


def _skip_line(index: int, raw: Any, exc: Exception) -> str:
    name = raw.get("name") if isinstance(raw, dict) else None
    who = f"MCP tool {_shown(name)!r}" if isinstance(name, str) and name else f"MCP tool {index + 1} (no name)"
    return visible(f"skipped {who}: {_summary(exc)}", single_line=True)


def _checked_tools(page: _Page, version: str, first_index: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Each tool of a page through the SDK's checks for the negotiated version (the surface the
    SDK's client applies to the whole list) and its Tool model, one at a time."""
    from mcp_types import Tool
    from mcp_types.methods import validate_server_result
    from pydantic import ValidationError

    kept: list[dict[str, Any]] = []
    skipped: list[str] = []
    for offset, raw in enumerate(page.tools):
        try:
            with contextlib.suppress(KeyError):  # a version without a tools/list row: the model alone decides
                validate_server_result("tools/list", version, {"tools": [raw]})
            tool = Tool.model_validate(raw, by_name=False)
        except (ValidationError, ValueError, TypeError) as exc:
            skipped.append(_skip_line(first_index + offset, raw, _located(exc)))
            continue
        kept.append(tool.model_dump(by_alias=True, exclude_none=True, mode="json"))
    return kept, skipped


def _located(exc: Exception) -> Exception:
    """A surface error located at tools.0.<field>: the tool's own field path reads better."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors()[0]
            loc = [str(part) for part in first["loc"]]
            if loc[:2] == ["tools", "0"]:
                loc = loc[2:]
            return ValueError(f"{'.'.join(loc)}: {first['msg']}" if loc else first["msg"])
    return exc


async def list_mcp_tools(
    command: list[str],
    timeout: float = DEFAULT_TIMEOUT,
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    who: str | None = None,
) -> ListedTools:
    """The tools of an MCP server started with `command` over stdio. tools/list is read as raw
    JSON-RPC (the SDK's client refuses the whole list for one bad tool) and each tool is checked
    alone; the SDK still does the transport and the handshake. `env` is added to the SDK's minimal
    environment (PATH, HOME, ...); `who` names the server in errors (default: its command)."""
    try:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client
    except ImportError:
        raise MCPImportError(INSTALL_HINT) from None
    if not command:
        raise MCPImportError("give the MCP server command after --, e.g. catalog import-mcp -- python my_server.py")
    who = who or f"the MCP server `{shlex.join(command)}`"
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
        params = StdioServerParameters(command=command[0], args=command[1:], env=env or None, cwd=cwd)
        try:
            return await _list_tools(lambda: stdio_client(params, errlog=errlog), who, timeout, lambda: _stderr_tail(errlog))
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            reason = exc.strerror or str(exc)
            raise MCPImportError(f"cannot start {who}: {reason}") from None


async def list_remote_tools(url: str, *, transport: str = "http", headers: dict[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT, who: str | None = None) -> ListedTools:
    """The tools of a remote MCP server: streamable HTTP (`transport` "http") or the older SSE."""
    try:
        import httpx2
        from mcp.client.sse import sse_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client
    except ImportError:
        raise MCPImportError(INSTALL_HINT) from None
    who = who or f"the MCP server at {url}"
    limit = httpx2.Timeout(timeout)
    refused: list[str] = []  # the HTTP status of a refused request: the SDK's error only says "an error response"

    async def note(response: Any) -> None:
        if response.status_code >= 400 and not refused:
            refused.append(f"{response.status_code} {response.reason_phrase}".strip())

    def detail() -> str:
        if not refused:
            return ""
        hint = ": check the headers (a key or token) the configuration gives it" if refused[0][:3] in ("401", "403") else ""
        return f"; it answered HTTP {refused[0]}{hint}"

    def client_with_note(**kwargs: Any) -> Any:
        client = create_mcp_http_client(**kwargs)
        client.event_hooks["response"].append(note)
        return client

    if transport == "sse":
        return await _list_tools(lambda: sse_client(url, headers=headers or None, timeout=timeout, sse_read_timeout=timeout, httpx_client_factory=client_with_note), who, timeout, detail)

    @contextlib.asynccontextmanager
    async def connect() -> Any:
        async with client_with_note(headers=headers or None, timeout=limit) as client, streamable_http_client(url, http_client=client) as streams:
            yield streams

    return await _list_tools(connect, who, timeout, detail)


async def _list_tools(connect: Any, who: str, timeout: float, stderr: Any = lambda: "") -> ListedTools:
    """initialize, then tools/list page by page, over the streams `connect()` opens."""
    try:
        import anyio
        from mcp import ClientSession
        from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
    except ImportError:
        raise MCPImportError(INSTALL_HINT) from None
    failure = ""  # raised once the session is closed (its task group would wrap it in a group)
    with _sdk_log() as unreadable:
        try:
            with anyio.fail_after(timeout):
                async with connect() as (read, write):
                    dispatcher = JSONRPCDispatcher(read, write)
                    async with ClientSession(dispatcher=dispatcher) as session:
                        init = await session.initialize()
                        listed = ListedTools(server_name=init.server_info.name if init.server_info else None)
                        cursor: str | None = None
                        while True:
                            raw = await dispatcher.send_raw_request("tools/list", {"cursor": cursor} if cursor else None)
                            try:
                                page = _Page.model_validate(raw)
                            except ValueError as exc:
                                failure = f"{who} answered tools/list with no list of tools ({_summary(exc)}); nothing was written"
                                break
                            kept, skipped = _checked_tools(page, init.protocol_version, len(listed.tools) + len(listed.skipped))
                            listed.tools += kept
                            listed.skipped += skipped
                            cursor = page.nextCursor
                            if not cursor:
                                break
        except TimeoutError:
            raise MCPImportError(f"{who} did not list its tools within {timeout:g} s{_unreadable(unreadable)}{stderr()}") from None
        except (FileNotFoundError, PermissionError, NotADirectoryError):
            raise
        except Exception as exc:  # the SDK raises many kinds (closed streams, protocol errors, groups)
            if isinstance(_first(exc), (FileNotFoundError, PermissionError, NotADirectoryError)):
                raise _first(exc) from None
            raise MCPImportError(f"{who} stopped or failed before listing its tools ({_summary(exc)}){_unreadable(unreadable)}{stderr()}") from None
    if failure:
        raise MCPImportError(failure)
    return listed


def _first(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        self.messages.append(_summary(exc) if exc else record.getMessage())


@contextlib.contextmanager
def _sdk_log() -> Iterator[list[str]]:
    """The SDK's own log records, kept for the error instead of printed: a server line that is not
    JSON-RPC (junk on stdout, a 5,000-digit number, nesting past the parser) is logged by the SDK
    with its traceback on stderr, and the request it answered then waits for the timeout."""
    logger = logging.getLogger("mcp")
    handler = _Collect()
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _unreadable(messages: list[str]) -> str:
    if not messages:
        return ""
    many = f"{len(messages)} lines" if len(messages) > 1 else "a line"
    return f"; it wrote {many} the MCP client could not read (first: {messages[0][:200]})"


def _clean_name(name: Any) -> str:
    """A server's self-reported name as a catalog name: one printable line, bounded (untrusted text)."""
    if not isinstance(name, str):
        return ""
    text = "".join(" " if unicodedata.category(ch)[0] in "CZ" else ch for ch in name)
    return " ".join(text.split())[:MAX_CATALOG_NAME].strip()


def _summary(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    errors = getattr(exc, "errors", None)
    if isinstance(exc, ValueError) and callable(errors):  # pydantic: the first error, without its URL and input dump
        with contextlib.suppress(Exception):
            first = errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            text = f"{where}: {first['msg']}" if where else first["msg"]
    return " ".join(text.split())[:200]


def import_mcp(command: list[str], name: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> ImportResult:
    import asyncio

    listed = asyncio.run(list_mcp_tools(command, timeout))
    if not listed.tools and listed.skipped:
        shown = "; ".join(line.removeprefix("skipped ") for line in listed.skipped[:3])
        more = f" (+{len(listed.skipped) - 3} more)" if len(listed.skipped) > 3 else ""
        raise MCPImportError(f"none of the {len(listed.skipped)} tools the MCP server lists can be imported: {shown}{more}; nothing was written")
    catalog_name = (name or _clean_name(listed.server_name) or "mcp").strip() or "mcp"
    result = catalog_from_tools(listed.tools, catalog_name)
    result.skipped = listed.skipped
    return result
