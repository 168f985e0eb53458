"""A raw MCP server over stdio (no SDK) whose answers a test scripts in a JSON file.

Usage: python mcp_scripted_server.py SCRIPT.json. The file is read at start, so a property test
rewrites it and runs the import again. Raw JSON-RPC lines let a test send what the SDK's server
would refuse to send: tools whose fields are any JSON text (NaN, 1e400, non-object schemas),
junk on stdout, an answer cut off mid-line, or no answer at all.

Script keys (all optional):
  server_name   serverInfo.name in the initialize answer (any JSON value)
  tools_json    the tools/list result's "tools", as JSON text written verbatim (default "[]")
  pages         list of tools_json texts: one tools/list page each, linked by nextCursor
  stdout_junk   text written to stdout before the first answer
  stderr        text written to stderr at start
  mode          "ok" | "hang_list" (never answer tools/list) | "cut_list" (write half of the
                tools/list answer, then exit) | "exit_after_init" | "error_list" (a JSON-RPC error)
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        script = json.load(handle)
    out = sys.stdout
    if script.get("stderr"):
        sys.stderr.write(script["stderr"])
        sys.stderr.flush()
    if script.get("stdout_junk"):
        out.write(script["stdout_junk"])
        out.flush()
    mode = script.get("mode", "ok")
    pages = script.get("pages") or [script.get("tools_json", "[]")]
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        method, ident = request.get("method"), request.get("id")
        if ident is None:  # a notification
            continue
        if method == "initialize":
            result = {
                "protocolVersion": request.get("params", {}).get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": script.get("server_name", "scripted"), "version": "1.0"},
            }
            out.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}) + "\n")
            out.flush()
            if mode == "exit_after_init":
                return
        elif method == "tools/list":
            if mode == "hang_list":
                time.sleep(3600)
            if mode == "error_list":
                out.write(json.dumps({"jsonrpc": "2.0", "id": ident, "error": {"code": -32603, "message": script.get("error", "boom")}}) + "\n")
                out.flush()
                continue
            cursor = (request.get("params") or {}).get("cursor")
            page = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
            tail = f',"nextCursor":"{page + 1}"' if page + 1 < len(pages) else ""
            text = '{"jsonrpc":"2.0","id":' + json.dumps(ident) + ',"result":{"tools":' + pages[min(page, len(pages) - 1)] + tail + "}}\n"
            if mode == "cut_list":
                out.write(text[: len(text) // 2])
                out.flush()
                return
            out.write(text)
            out.flush()
        else:
            out.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {}}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
