"""MCP host configurations as agents keep them: which servers a host starts, and how.

Two shapes are read:

- `{"mcpServers": {name: {...}}}`: Claude Desktop, Claude Code (`.mcp.json`), Cursor, Windsurf,
  Cline and most others;
- `{"servers": {name: {...}}, "inputs": [...]}`: VS Code's `.vscode/mcp.json` (also under an
  `"mcp"` key in its settings.json).

Each entry is a stdio server (`command`, `args`, `env`, `cwd`) or a remote one (`url` with `type`
"http", "streamable-http" or "sse", and `headers`). JSON with comments and trailing commas (VS
Code writes them) is read too.

Variables are filled in as hosts do: `${env:NAME}`, `${NAME}` and `${NAME:-default}` from this
process's environment, `${userHome}`, `${workspaceFolder}` (the current folder), and VS Code's
`${input:ID}` from the environment variable a `--input ID=VAR` names (VS Code prompts for it; we
never prompt). Whatever a variable, an `env` entry or a header carries is a secret as far as this
module is concerned: it goes to the server process or the HTTP request and nowhere else, and every
message about a server passes through `HostServer.redact` first.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from .errors import UserError
from .textsafe import visible

MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_SERVERS = 500
MIN_SECRET_CHARS = 4  # shorter values ("1", "on") are redacted nowhere: they would blank every digit
_VARIABLE = re.compile(r"\$\{([^{}]*)\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class HostConfigError(UserError):
    pass


Transport = Literal["stdio", "http", "sse"]


class HostServer(BaseModel):
    """One server of a host configuration, its variables filled in. `problem` says why it cannot
    be started (then it is reported and the others are still imported)."""

    name: str
    transport: Transport = "stdio"
    command: list[str] = []  # the executable and its arguments
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = {}
    secrets: list[str] = []  # every value a variable, an env entry or a header gave: never shown
    problem: str = ""
    notes: list[str] = []

    def shown(self) -> str:
        """How the server is started, for a person: the program, or the URL without its query
        (arguments are left out: a connection string or a key may sit there)."""
        if self.transport == "stdio":
            program = Path(self.command[0]).name if self.command else "?"
            return self.redact(f"stdio: {program}")
        return self.redact(f"{self.transport}: {_url_without_secrets(self.url)}")

    def redact(self, text: str) -> str:
        """`text` with every secret value of this server replaced by `***`, on one printable line."""
        for value in sorted(self.secrets, key=len, reverse=True):
            if len(value) >= MIN_SECRET_CHARS:
                text = text.replace(value, "***")
        return visible(text, single_line=True)


class HostConfig(BaseModel):
    path: str
    form: Literal["mcpServers", "servers"]
    servers: list[HostServer]
    skipped: list[str] = []  # servers left out on purpose (disabled in the host)


def _url_without_secrets(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an invalid URL)"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _read_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise HostConfigError(f"{path}: no such host configuration file") from None
    except IsADirectoryError:
        raise HostConfigError(f"{path}: is a folder; give the host's JSON configuration file (e.g. claude_desktop_config.json, .vscode/mcp.json)") from None
    except OSError as exc:
        raise HostConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise HostConfigError(f"{path}: {len(data):,} bytes, past the {MAX_CONFIG_BYTES:,} a host configuration may have")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise HostConfigError(f"{path}: is not UTF-8 text; a host configuration is JSON") from None
    try:
        return json.loads(text)
    except ValueError as strict:
        try:  # VS Code's files are JSON with comments and trailing commas
            import json5
        except ImportError:
            raise HostConfigError(f"{path}: is not valid JSON ({strict})") from None
        try:
            return json5.loads(text)
        except (ValueError, RecursionError) as exc:
            raise HostConfigError(f"{path}: is not valid JSON ({' '.join(str(exc).split())[:200]})") from None


def read_host_config(path: str | Path, *, inputs: dict[str, str] | None = None, environ: dict[str, str] | None = None, workspace: Path | None = None) -> HostConfig:
    """The servers of a host configuration file, in the file's order, variables filled in.

    `inputs` maps a VS Code input id to the name of the environment variable holding its value.
    A malformed file is one HostConfigError; a malformed entry is a server with a `problem`."""
    path = Path(path)
    data = _read_json(path)
    if isinstance(data, dict) and isinstance(data.get("mcp"), dict) and "servers" not in data and "mcpServers" not in data:
        data = data["mcp"]  # VS Code's settings.json keeps them under "mcp"
    if not isinstance(data, dict):
        raise HostConfigError(f"{path}: the file holds JSON {_kind(data)}, not an object with \"mcpServers\" (Claude Desktop, Cursor) or \"servers\" (VS Code)")
    if isinstance(data.get("mcpServers"), dict):
        form, entries = "mcpServers", data["mcpServers"]
    elif isinstance(data.get("servers"), dict):
        form, entries = "servers", data["servers"]
    elif "mcpServers" in data or "servers" in data:
        key = "mcpServers" if "mcpServers" in data else "servers"
        raise HostConfigError(f"{path}: \"{key}\" is JSON {_kind(data[key])}, not an object of servers by name")
    else:
        raise HostConfigError(f"{path}: no MCP servers in it: expected an \"mcpServers\" object (Claude Desktop, Cursor) or a \"servers\" object (VS Code)")
    if not entries:
        raise HostConfigError(f"{path}: \"{form}\" names no server")
    if len(entries) > MAX_SERVERS:
        raise HostConfigError(f"{path}: {len(entries):,} servers, past the {MAX_SERVERS} one import takes")
    declared = _declared_inputs(data.get("inputs"))
    expander = _Expander(environ if environ is not None else dict(os.environ), inputs or {}, declared, workspace or Path.cwd())
    servers: list[HostServer] = []
    skipped: list[str] = []
    for name, entry in entries.items():
        if isinstance(entry, dict) and entry.get("disabled") is True:
            skipped.append(f"{visible(name, single_line=True)}: disabled in the host configuration; left out")
            continue
        servers.append(_server(str(name), entry, expander))
    if not servers:
        raise HostConfigError(f"{path}: every server in it is disabled; nothing to import")
    return HostConfig(path=str(path), form=form, servers=servers, skipped=skipped)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def _declared_inputs(raw: Any) -> set[str]:
    if not isinstance(raw, list):
        return set()
    return {item["id"] for item in raw if isinstance(item, dict) and isinstance(item.get("id"), str)}


_PLACES = {"userHome", "workspaceFolder", "workspaceRoot", "pathSeparator", "/"}


class _Unresolved(Exception):
    """A variable with no value: the server cannot be started as the host would start it."""


class _Expander:
    def __init__(self, environ: dict[str, str], inputs: dict[str, str], declared: set[str], workspace: Path) -> None:
        self.environ = environ
        self.inputs = inputs
        self.declared = declared
        self.workspace = workspace
        self.used: list[str] = []  # the values variables gave (secrets)

    def __call__(self, text: str) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            value = self._value(name)
            if value is None:
                return match.group(0)  # a variable we do not know (VS Code has many): left as the host's text
            if name not in _PLACES:  # a value from the environment or an input: a secret
                self.used.append(value)
            return value

        return _VARIABLE.sub(one, text)

    def _value(self, name: str) -> str | None:
        if name.startswith("env:"):
            var = name[4:]
            if var not in self.environ:
                raise _Unresolved(f"it needs the environment variable {var}, which is not set")
            return self.environ[var]
        if name.startswith("input:"):
            ident = name[6:]
            var = self.inputs.get(ident)
            if var is None:
                where = "declared in the file's \"inputs\"" if ident in self.declared else "not declared in the file"
                raise _Unresolved(f"it needs the input '{ident}' ({where}; VS Code prompts for it): give it with --input {ident}=ENV_VAR")
            if var not in self.environ:
                raise _Unresolved(f"its input '{ident}' comes from the environment variable {var} (--input), which is not set")
            return self.environ[var]
        if name == "userHome":
            return str(Path.home())
        if name in ("workspaceFolder", "workspaceRoot"):
            return str(self.workspace)
        if name in ("pathSeparator", "/"):
            return os.sep
        var, _, default = name.partition(":-")
        if _ENV_NAME.fullmatch(var):  # Claude Code's ${VAR} and ${VAR:-default}
            if var in self.environ:
                return self.environ[var]
            if ":-" in name:
                return default
            raise _Unresolved(f"it needs the environment variable {var}, which is not set")
        return None


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Unresolved(f"its {what} is not a list of strings")
    return value


def _table(value: Any, what: str) -> dict[str, str]:
    """An env or headers object: string keys, values as the host passes them (numbers and booleans as text)."""
    if not isinstance(value, dict):
        raise _Unresolved(f"its {what} is JSON {_kind(value)}, not an object")
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, bool):
            out[key] = "true" if item else "false"
        elif isinstance(item, (str, int, float)):
            out[key] = str(item)
        elif item is None:
            continue
        else:
            raise _Unresolved(f"its {what} entry {visible(key, single_line=True)[:40]!r} is JSON {_kind(item)}, not text")
    return out


_TRANSPORTS = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamablehttp": "http", "streamable_http": "http", "sse": "sse"}


def _server(name: str, entry: Any, expand: _Expander) -> HostServer:
    server = HostServer(name=name)
    if not isinstance(entry, dict):
        server.problem = f"its entry is JSON {_kind(entry)}, not an object"
        return server
    expand.used = []
    secrets: list[str] = []
    try:
        kind = entry.get("type", entry.get("transport"))
        if kind is not None and (not isinstance(kind, str) or kind.lower() not in _TRANSPORTS):
            raise _Unresolved(f"its type {visible(str(kind), single_line=True)[:40]!r} is not one of stdio, http, streamable-http, sse")
        url = entry.get("url", entry.get("serverUrl"))
        command = entry.get("command")
        transport = _TRANSPORTS[kind.lower()] if isinstance(kind, str) else ("stdio" if command is not None else "http" if url is not None else "")
        if not transport:
            raise _Unresolved("it has neither a \"command\" (a stdio server) nor a \"url\" (a remote one)")
        server.transport = transport  # type: ignore[assignment]
        if "env" in entry and entry["env"] is not None:
            server.env = {key: expand(value) for key, value in _table(entry["env"], "env").items()}
            secrets += server.env.values()
        if transport == "stdio":
            if not isinstance(command, str) or not command.strip():
                raise _Unresolved("it is a stdio server with no \"command\"")
            args = _strings(entry.get("args", []) or [], "args")
            server.command = [expand(command), *(expand(arg) for arg in args)]
            if isinstance(entry.get("cwd"), str):
                server.cwd = expand(entry["cwd"])
            if "envFile" in entry:
                server.notes.append("its envFile is not read: put the variables it needs in the environment or in \"env\"")
        else:
            if not isinstance(url, str) or not url.strip():
                raise _Unresolved(f"it is an {transport} server with no \"url\"")
            server.url = expand(url.strip())
            if not re.match(r"(?i)^https?://", server.url):
                raise _Unresolved("its url is not an http:// or https:// address")
            if entry.get("headers") is not None:
                server.headers = {key: expand(value) for key, value in _table(entry["headers"], "headers").items()}
                secrets += server.headers.values()
    except _Unresolved as exc:
        server.problem = str(exc)
    server.secrets = sorted({*secrets, *expand.used} - {""})
    return server


def parse_inputs(pairs: list[str]) -> dict[str, str]:
    """`--input ID=ENV_VAR` pairs: input id -> the environment variable that holds its value."""
    out: dict[str, str] = {}
    for pair in pairs:
        ident, sep, var = pair.partition("=")
        if not sep or not ident or not _ENV_NAME.fullmatch(var):
            raise HostConfigError(f"--input {pair!r}: give an input id and the name of an environment variable, e.g. --input github_token=GITHUB_TOKEN (the value itself never goes on the command line)")
        out[ident] = var
    return out
