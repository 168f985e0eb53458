"""Import a catalog from an MCP server: start it over stdio, call tools/list, write catalog TOML.

The official `mcp` SDK is an optional extra (`pip install 'tui-router[mcp]'`). The conversion itself
(`catalog_from_tools`) works on plain dicts, so it is testable without a server.

Every MCP tool becomes a catalog tool; nothing is dropped. A name that is not a valid option id is
given a derived id (its original name kept as the title) and reported, as are missing descriptions
(a placeholder the operator must replace) and schema values TOML cannot hold (null).
"""

from __future__ import annotations

import re
import shlex
import tempfile
import unicodedata
from typing import Any

import tomli_w
from pydantic import BaseModel

from .catalog import DEFAULT_NONE_OPTION, ID_PATTERN, Catalog, Risk, parse_catalog
from .errors import CatalogError, UserError

DEFAULT_TIMEOUT = 30.0
MAX_WHEN_TO_USE = 300
INSTALL_HINT = "catalog import-mcp needs the MCP SDK, an optional extra: install it with pip install 'tui-router[mcp]'"


class MCPImportError(UserError):
    pass


class ImportResult(BaseModel):
    catalog: Catalog
    data: dict[str, Any]
    notes: list[str] = []  # one line per tool that needed attention
    renamed: dict[str, str] = {}  # MCP name -> catalog id

    def toml(self, source: str = "") -> str:
        header = ["# Catalog imported from an MCP server by `tui-router catalog import-mcp`."]
        if source:
            header.append(f"# Server command: {source}")
        if self.renamed:
            header.append("# MCP names that are not valid ids (catalog id <- MCP tool name):")
            header += [f"#   {new} <- {old}" for old, new in self.renamed.items()]
        if self.notes:
            header.append("# Check before routing:")
            header += [f"#   {note}" for note in self.notes if not note.startswith("renamed")]
        return "\n".join(header) + "\n\n" + tomli_w.dumps(self.data)


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


def _risk(annotations: dict[str, Any]) -> Risk:
    """From MCP tool annotations, with the spec's defaults (not read-only, open world) when absent."""
    if annotations.get("readOnlyHint") is True:
        return Risk.read
    if annotations.get("openWorldHint", True) is not False:
        return Risk.outbound
    return Risk.write


def catalog_from_tools(tools: list[dict[str, Any]], name: str, none_option: str = DEFAULT_NONE_OPTION) -> ImportResult:
    """Catalog data from MCP tool definitions (tools/list items as JSON dicts)."""
    if not tools:
        raise MCPImportError("the MCP server lists no tools; there is nothing to import")
    taken = {none_option}
    entries: list[dict[str, Any]] = []
    notes: list[str] = []
    renamed: dict[str, str] = {}
    for index, tool in enumerate(tools):
        raw_name = tool.get("name")
        mcp_name = raw_name if isinstance(raw_name, str) and raw_name else f"tool {index + 1}"
        if ID_PATTERN.match(mcp_name) and mcp_name not in taken:
            tool_id = mcp_name
        else:
            tool_id = _unique(derive_id(mcp_name), taken)
            why = "is not a valid id" if not ID_PATTERN.match(mcp_name) else "collides with another id"
            renamed[mcp_name] = tool_id
            notes.append(f"renamed: MCP tool {mcp_name!r} {why}; its catalog id is {tool_id!r} (the MCP name is kept as its title)")
        taken.add(tool_id)

        description = tool.get("description") if isinstance(tool.get("description"), str) else ""
        when, shortened = _when_to_use(description or "")
        if not when:
            when = f"No description from the MCP server for {mcp_name!r}; write when_to_use before routing to it."
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
        if isinstance(schema, dict):
            dropped: list[str] = []
            entry["schema"] = _without_nulls(schema, "schema", dropped)
            if dropped:
                notes.append(f"{tool_id}: TOML cannot hold null; dropped {', '.join(dropped[:4])}" + (f" (+{len(dropped) - 4})" if len(dropped) > 4 else ""))
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


async def list_mcp_tools(command: list[str], timeout: float = DEFAULT_TIMEOUT) -> tuple[str | None, list[dict[str, Any]]]:
    """(server name, tools as JSON dicts) from an MCP server started with `command` over stdio."""
    try:
        import anyio
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
    except ImportError:
        raise MCPImportError(INSTALL_HINT) from None
    if not command:
        raise MCPImportError("give the MCP server command after --, e.g. catalog import-mcp -- python my_server.py")
    shown = shlex.join(command)
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
        params = StdioServerParameters(command=command[0], args=command[1:])
        try:
            with anyio.fail_after(timeout):
                async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                    info = client.server_info
                    tools: list[dict[str, Any]] = []
                    cursor: str | None = None
                    while True:
                        page = await client.list_tools(cursor=cursor)
                        tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools]
                        cursor = page.next_cursor
                        if not cursor:
                            break
                    return (info.name if info else None), tools
        except TimeoutError:
            raise MCPImportError(f"the MCP server `{shown}` did not list its tools within {timeout:g} s{_stderr_tail(errlog)}") from None
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            reason = exc.strerror or str(exc)
            raise MCPImportError(f"cannot start the MCP server `{shown}`: {reason}") from None
        except Exception as exc:  # the SDK raises many kinds (closed streams, protocol errors, groups)
            raise MCPImportError(f"the MCP server `{shown}` stopped or failed before listing its tools ({_summary(exc)}){_stderr_tail(errlog)}") from None


def _summary(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:200]


def import_mcp(command: list[str], name: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> ImportResult:
    import asyncio

    server_name, tools = asyncio.run(list_mcp_tools(command, timeout))
    catalog_name = (name or server_name or "mcp").strip() or "mcp"
    return catalog_from_tools(tools, catalog_name)
