"""tui-router: a console for triaging how AI agents route requests to tools."""

__version__ = "0.1.0"
