"""Errors a person can cause: each carries sentences meant for that person, never a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserError(Exception):
    """A problem with input the user controls (a file, a flag, a config value, a server)."""

    exit_code = 2

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or []

    def lines(self) -> list[str]:
        return self.problems or [self.message]

    def __str__(self) -> str:
        return "\n".join(self.lines())


class CatalogError(UserError):
    pass


class ConfigError(UserError):
    pass


class SessionError(UserError):
    pass


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """' (did you mean 'x'?)' or '' when nothing is close (difflib ratio below `cutoff`)."""
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return f" (did you mean '{match[0]}'?)" if match else ""
