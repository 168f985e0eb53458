"""One catalog from every MCP server a host starts: `catalog import-mcp --config FILE`.

An agent host shows its model the tools of all its servers at once, each name namespaced by the
server (`github.create_issue` beside `gitlab.create_issue`). This builds the same allowlist:

- each server is started (stdio) or reached (HTTP, SSE) as the host configuration says, several at
  a time, each within its own timeout; a server that fails to start, exits, hangs or lists no valid
  tool is one line (the end of its stderr, secrets blanked) and the others are still imported;
- each server's tools/list goes through the single-server conversion (`mcp_import.catalog_from_tools`:
  ids, first paragraph of the description, schema, risk from the annotations), then the ids become
  `<prefix>.<tool id>` (the prefix is the server's name made an id, or `--prefix SERVER=P`), the
  category the server's name;
- the escalation options `ask_user` and `human_review` are added (generic texts for tool hosts).

`merge_servers` is also what `benchmarks/build_mcp_catalogs.py` runs on the committed per-server
catalogs, so the real-MCP evaluation catalogs are this command's output.
"""

from __future__ import annotations

import re
from typing import Any

import tomli_w
from pydantic import BaseModel

from . import tomlio
from .catalog import DEFAULT_NONE_OPTION, ID_PATTERN, Catalog, parse_catalog
from .errors import CatalogError
from .mcp_hosts import HostConfig, HostServer
from .mcp_import import DEFAULT_TIMEOUT, ImportResult, MCPImportError, _comment, _unique, catalog_from_tools, derive_id
from .textsafe import visible

MAX_PREFIX = 32
PREFIX_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
DEFAULT_JOBS = 4  # servers started at once: most spend their start-up in node or python imports
MAX_FAILURE_CHARS = 400

# The escalation options every merged catalog gets: hand a turn to a person or ask the user, worded
# for tool hosts (repositories, files, channels, records, places). Also the texts of the committed
# real-MCP catalogs (benchmarks/data/mcp/merged.toml holds the same two).
ESCALATION: dict[str, dict[str, Any]] = {
    "ask_user": {
        "when_to_use": "Essential details are missing (which repository, file, channel, record or place); ask the user a clarifying question before doing anything.",
        "keywords": ["unclear", "which one", "that thing", "the usual"],
    },
    "human_review": {
        "when_to_use": "A person must decide: destructive or irreversible actions on many items, disputes, legal, security or HR matters, and requests to bypass reviews, checks or permissions.",
        "keywords": ["delete everything", "lawsuit", "security incident", "bypass", "override", "harassment", "leaked"],
    },
}


def default_prefix(server: str) -> str:
    """A server's name as an id prefix: `google-maps` stays, `GitHub Enterprise` -> `github_enterprise`."""
    text = derive_id(server.lower()).replace(".", "-").replace(":", "-")  # lower first: "GitHub" is one word
    return text[:MAX_PREFIX].rstrip("_-") or "server"


def parse_prefixes(pairs: list[str]) -> dict[str, str]:
    """`--prefix SERVER=PREFIX` pairs."""
    out: dict[str, str] = {}
    for pair in pairs:
        server, sep, prefix = pair.partition("=")
        if not sep or not server:
            raise MCPImportError(f"--prefix {pair!r}: give a server name and its id prefix, e.g. --prefix filesystem=fs")
        if not PREFIX_PATTERN.fullmatch(prefix):
            raise MCPImportError(f"--prefix {pair!r}: a prefix is a lowercase letter then up to 31 of a-z, 0-9, _ and - (no dot: the dot ends it)")
        out[server] = prefix
    return out


class ServerTools(BaseModel):
    """One server's part of a merged catalog: its single-server catalog tools (as TOML dicts)."""

    server: str
    prefix: str
    shown: str = ""  # how it is started, secrets left out (the header says it)
    tools: list[dict[str, Any]]
    notes: list[str] = []  # the single-server import's notes (renamed, placeholder, shortened ...)


class MergedCatalog(BaseModel):
    catalog: Catalog
    data: dict[str, Any]
    servers: list[ServerTools]
    notes: list[str] = []  # one line per tool that needs a look, "<server>: ..."
    failed: list[str] = []  # one line per server not imported (why; the end of its stderr)
    failed_servers: list[str] = []  # their names
    skipped: list[str] = []  # servers left out on purpose (disabled, not selected)

    def toml(self, source: str = "") -> str:
        header = [f"# Catalog imported from {len(self.servers)} MCP server{'s' if len(self.servers) != 1 else ''} by `tui-router catalog import-mcp --config`."]
        if source:
            header.append(f"# Host configuration: {_comment(source)}")
        header.append("# Ids are <prefix>.<MCP tool>; the category is the server; risk comes from each tool's MCP annotations.")
        header.append("# Server (ids): how it is started, tools")
        header += [f"#   {_comment(s.server)} ({s.prefix}.*): {_comment(s.shown)}, {len(s.tools)} tool{'s' if len(s.tools) != 1 else ''}" for s in self.servers]
        if self.failed:
            header.append("# Not imported (rerun with --update once they start):")
            header += [f"#   {_comment(line)}" for line in self.failed]
        if self.notes:
            header.append("# Check before routing:")
            header += [f"#   {_comment(line)}" for line in self.notes]
        return tomlio.replace_surrogates("\n".join(header) + "\n\n" + tomli_w.dumps(self.data))


def merge_servers(
    servers: list[ServerTools],
    *,
    name: str,
    description: str,
    none_option: str = DEFAULT_NONE_OPTION,
    escalation: dict[str, dict[str, Any]] | None = None,
) -> MergedCatalog:
    """The merged catalog data: `<prefix>.<id>` ids, category = server, the escalation options last
    (`escalation=None`: the defaults; `{}`: none)."""
    escalation = ESCALATION if escalation is None else escalation
    prefixes: dict[str, str] = {}
    for part in servers:
        if part.prefix in prefixes:
            raise MCPImportError(f"the servers '{prefixes[part.prefix]}' and '{part.server}' would share the id prefix '{part.prefix}'; give one another with --prefix SERVER=PREFIX")
        prefixes[part.prefix] = part.server
    taken = {none_option, *escalation}
    tools: list[dict[str, Any]] = []
    notes: list[str] = []
    for part in servers:
        who = visible(part.server, single_line=True)
        notes += [f"{who}: {note}" for note in part.notes if not note.startswith("renamed")]
        for tool in part.tools:
            new_id = f"{part.prefix}.{tool['id']}"
            if not ID_PATTERN.fullmatch(new_id) or new_id in taken:
                longer = new_id
                new_id = _unique(new_id[:64].rstrip("_.:-"), taken)
                notes.append(f"{who}: the id {longer!r} is longer than 64 characters; it is {new_id!r}")
            taken.add(new_id)
            out: dict[str, Any] = {"id": new_id}
            if "title" in tool:
                out["title"] = tool["title"]
            out["when_to_use"] = tool["when_to_use"]
            out["category"] = part.server
            out["risk"] = tool.get("risk", "read")
            for key in ("keywords", "examples", "schema"):
                if key in tool:
                    out[key] = tool[key]
            tools.append(out)
    for option, texts in escalation.items():
        tools.append({"id": option, "when_to_use": texts["when_to_use"], "category": "escalation", "risk": "escalation", "keywords": list(texts.get("keywords", []))})
    data = {"name": name, "description": description, "none_option": none_option, "tools": tools}
    try:
        catalog = parse_catalog(data, source=f"<merged catalog {name}>")
    except CatalogError as exc:
        raise MCPImportError(f"the merged catalog is invalid: {'; '.join(exc.lines()[:3])}") from None
    return MergedCatalog(catalog=catalog, data=data, servers=servers, notes=notes)


# ---------------------------------------------------------------- starting the host's servers


class ServerOutcome(BaseModel):
    server: HostServer
    result: ImportResult | None = None
    failure: str = ""


async def _import_one(server: HostServer, timeout: float) -> ServerOutcome:
    from .mcp_import import list_mcp_tools, list_remote_tools

    if server.problem:
        return ServerOutcome(server=server, failure=f"not started: {server.problem}")
    who = f"the MCP server '{visible(server.name, single_line=True)}'"
    try:
        if server.transport == "stdio":
            listed = await list_mcp_tools(server.command, timeout, env=server.env, cwd=server.cwd, who=who)
        else:
            listed = await list_remote_tools(server.url, transport=server.transport, headers=server.headers, timeout=timeout, who=who)
        if not listed.tools:
            why = "lists no tools" if not listed.skipped else f"lists no valid tool ({'; '.join(line.removeprefix('skipped ') for line in listed.skipped[:2])})"
            return ServerOutcome(server=server, failure=why)
        result = catalog_from_tools(listed.tools, server.name)
        result.skipped = listed.skipped
        return ServerOutcome(server=server, result=result)
    except MCPImportError as exc:
        text = str(exc).replace(f"{who} ", "", 1) if str(exc).startswith(who) else str(exc)
        return ServerOutcome(server=server, failure=text)


async def list_host_servers(servers: list[HostServer], *, timeout: float = DEFAULT_TIMEOUT, jobs: int = DEFAULT_JOBS) -> list[ServerOutcome]:
    """Every server's tools, `jobs` at a time, each within `timeout`, in the configuration's order."""
    import anyio

    limiter = anyio.CapacityLimiter(max(1, jobs))
    outcomes: list[ServerOutcome | None] = [None] * len(servers)

    async def run(index: int, server: HostServer) -> None:
        async with limiter:
            outcomes[index] = await _import_one(server, timeout)

    async with anyio.create_task_group() as tg:
        for index, server in enumerate(servers):
            tg.start_soon(run, index, server)
    return [o for o in outcomes if o is not None]


def _failure_line(outcome: ServerOutcome) -> str:
    text = outcome.server.redact(f"{outcome.server.name}: {outcome.failure}")
    return text if len(text) <= MAX_FAILURE_CHARS else text[: MAX_FAILURE_CHARS - 1] + "…"


def import_host(
    config: HostConfig,
    *,
    name: str,
    description: str | None = None,
    prefixes: dict[str, str] | None = None,
    only: list[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    jobs: int = DEFAULT_JOBS,
    escalation: dict[str, dict[str, Any]] | None = None,
    inherited: dict[str, str] | None = None,
) -> MergedCatalog:
    """Start the configuration's servers (all, or those named in `only`) and merge their tools.
    `prefixes` were given by a person (each must name a server); `inherited` come from a catalog
    being updated (those of servers no longer configured are ignored)."""
    import asyncio

    prefixes = dict(prefixes or {})
    known = [s.name for s in config.servers]
    for server in prefixes:
        if server not in known:
            from .errors import did_you_mean

            raise MCPImportError(f"--prefix {server}=...: the host configuration {config.path} has no server '{server}'{did_you_mean(server, known)}; it has {', '.join(known)}")
    prefixes = {k: v for k, v in (inherited or {}).items() if k in known} | prefixes  # given ones win
    for server in only or []:
        if server not in known:
            from .errors import did_you_mean

            raise MCPImportError(f"the host configuration {config.path} has no server '{server}'{did_you_mean(server, known)}; it has {', '.join(known)}")
    by_name = {s.name: s for s in config.servers}
    selected = [by_name[n] for n in dict.fromkeys(only)] if only else list(config.servers)  # --server's order
    skipped = list(config.skipped)
    left = [visible(s.name, single_line=True) for s in config.servers if only and s.name not in only]
    if left:
        shown = ", ".join(left[:8]) + (f" and {len(left) - 8} more" if len(left) > 8 else "")
        skipped.append(f"{len(left)} server{'s' if len(left) != 1 else ''} of the configuration not selected (--server): {shown}")
    for server in selected:  # the prefixes first: a clash is known before any server starts
        prefixes.setdefault(server.name, default_prefix(server.name))
    clash = {}
    for server in selected:
        if prefixes[server.name] in clash:
            raise MCPImportError(f"the servers '{clash[prefixes[server.name]]}' and '{server.name}' would share the id prefix '{prefixes[server.name]}'; give one another with --prefix SERVER=PREFIX")
        clash[prefixes[server.name]] = server.name
    outcomes = asyncio.run(list_host_servers(selected, timeout=timeout, jobs=jobs))
    parts: list[ServerTools] = []
    failed: list[str] = []
    failed_names: list[str] = []
    notes: list[str] = []
    for outcome in outcomes:
        server = outcome.server
        notes += [server.redact(f"{server.name}: {note}") for note in server.notes]
        if outcome.result is None:
            failed.append(_failure_line(outcome))
            failed_names.append(server.name)
            continue
        result = outcome.result
        parts.append(ServerTools(
            server=server.name,
            prefix=prefixes[server.name],
            shown=server.shown(),
            tools=result.data["tools"],
            notes=[*result.notes, *result.skipped],
        ))
    if not parts:
        raise MCPImportError(f"no server of {config.path} could be imported; nothing was written", [f"{line}" for line in failed] + ["no server could be imported; nothing was written"])
    names = ", ".join(p.server for p in parts)
    merged = merge_servers(
        parts,
        name=name,
        description=description or f"What an agent host sees with the MCP servers of {visible(config.path, single_line=True)} ({names}); tool descriptions as the servers list them.",
        escalation=escalation,
    )
    merged.failed = failed
    merged.failed_servers = failed_names
    merged.skipped = skipped
    merged.notes = notes + merged.notes
    return merged


def prefixes_of(catalog: Catalog) -> dict[str, str]:
    """The server -> prefix map a merged catalog was written with (category = server, id =
    prefix.tool), so `--update` keeps the prefixes a first import was given."""
    found: dict[str, str] = {}
    for tool in catalog.tools:
        if tool.category and "." in tool.id and not tool.is_escalation:
            found.setdefault(tool.category, tool.id.split(".", 1)[0])
    return found
