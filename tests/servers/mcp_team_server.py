"""MCP servers (official `mcp` SDK) for the host-configuration import tests.

Usage: python mcp_team_server.py ROLE [--http PORTFILE]

ROLE picks the tools: `github` and `gitlab` share tool names (create_issue, search_repositories)
with different texts, as the real GitHub and GitLab servers do; `github2` is `github` one release
later (create_issue renamed open_issue, get_file_contents gone, create_gist new, search_repositories
described anew); `notes` is a small note-taking server.

The server refuses to start unless TEAM_TOKEN is set in its environment (a host configuration
passes it by name), so a test can tell that the importer passed it; the value goes nowhere.

--http PORTFILE: serve streamable HTTP on 127.0.0.1 (a free port, written to PORTFILE once
listening) and answer 401 to a request without `Authorization: Bearer $TEAM_TOKEN`.
"""

from __future__ import annotations

import os
import socket
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ = ToolAnnotations(read_only_hint=True)
LOCAL_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def build(role: str) -> MCPServer:
    server = MCPServer(f"{role}-server")
    if role in ("github", "github2"):
        if role == "github":

            @server.tool()
            def create_issue(owner: str, repo: str, title: str, body: str = "") -> str:
                """Create a new issue in a GitHub repository."""
                return "1"

            @server.tool(annotations=READ)
            def get_file_contents(owner: str, repo: str, path: str) -> str:
                """Get the contents of a file or directory from a GitHub repository."""
                return ""

            @server.tool(annotations=READ)
            def search_repositories(query: str) -> str:
                """Search for GitHub repositories."""
                return "[]"
        else:

            @server.tool()
            def open_issue(owner: str, repo: str, title: str, body: str = "") -> str:
                """Open a new issue in a GitHub repository."""
                return "1"

            @server.tool(annotations=READ)
            def search_repositories(query: str) -> str:
                """Search GitHub repositories by name, topic, language or stars."""
                return "[]"

            @server.tool()
            def create_gist(description: str, content: str) -> str:
                """Create a new gist with the given files."""
                return "g"

    elif role == "gitlab":

        @server.tool()
        def create_issue(project_id: str, title: str, description: str = "") -> str:
            """Create a new issue in a GitLab project."""
            return "1"

        @server.tool(annotations=READ)
        def search_repositories(search: str) -> str:
            """Search for GitLab projects."""
            return "[]"

        @server.tool()
        def create_merge_request(project_id: str, source_branch: str, target_branch: str, title: str) -> str:
            """Create a new merge request in a GitLab project."""
            return "1"

    elif role == "notes":

        @server.tool(annotations=LOCAL_WRITE)
        def add_note(text: str) -> str:
            """Add a note to the team notebook."""
            return "ok"

        @server.tool(annotations=READ)
        def search_notes(query: str) -> str:
            """Search the team notebook for notes about a topic."""
            return "[]"

    else:
        raise SystemExit(f"unknown role {role}")
    return server


def serve_http(server: MCPServer, portfile: str, token: str) -> None:
    import uvicorn

    app = server.streamable_http_app(json_response=True)

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    with open(portfile + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(str(sock.getsockname()[1]))
    os.replace(portfile + ".tmp", portfile)
    uvicorn.Server(uvicorn.Config(guarded, log_level="warning", lifespan="on")).run(sockets=[sock])


def main() -> None:
    role = sys.argv[1]
    token = os.environ.get("TEAM_TOKEN")
    if not token:
        sys.stderr.write("TEAM_TOKEN is not set; refusing to start\n")
        raise SystemExit(3)
    server = build(role)
    if "--http" in sys.argv:
        serve_http(server, sys.argv[sys.argv.index("--http") + 1], token)
    else:
        server.run()


if __name__ == "__main__":
    main()
