"""A small MCP server (official `mcp` SDK, stdio) whose tools exercise the catalog import.

get_weather, create_ticket: ordinary tools; "Send Email" and "searchDocs": names that are not
valid catalog ids; no_docs: no description; lookup_order: a nullable argument (null default).
"""

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("helpdesk-tools")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def get_weather(city: str, days: int = 1) -> str:
    """Get the weather forecast for a city for the next few days."""
    return "sunny"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
def create_ticket(title: str, body: str) -> str:
    """Open a support ticket in the helpdesk tracker.

    The second paragraph holds details the router does not need.
    """
    return "TICKET-1"


@server.tool(name="Send Email")
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email message to a recipient."""
    return "sent"


@server.tool(name="searchDocs", annotations=ToolAnnotations(read_only_hint=True))
def search_docs(query: str) -> str:
    """Search the product documentation for an answer."""
    return "found"


@server.tool()
def no_docs(x: int) -> int:
    return x


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup_order(order_id: str, region: str | None = None) -> str:
    """Look up the status of a customer order by its id."""
    return "shipped"


if __name__ == "__main__":
    server.run()
