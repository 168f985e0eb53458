"""CLI defects found by a third QA pass: the README's commands run verbatim, every --help read."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_harness import tui_router

from tui_router.embed import semantic_available

# one turn recorded with the default backend: confidence (0.92 - 1/2) / (1 - 1/2) = 0.84, so
# medium/confirm under its fitted 0.90, high/execute under the seeds' 0.75
RECORDED = """
[session]
id = "monday"
catalog = "demo"

[[turns]]
message = "show my calendar for monday"

[turns.decision]
candidates = ["list_events"]
choice = "list_events"
probabilities = { list_events = 0.92, defer_to_llm = 0.08 }
confidence = 0.84
band = "medium"
action = "confirm"
backend = "semantic"
high = 0.9
medium = 0.45
"""


@pytest.mark.skipif(not semantic_available(), reason="the semantic extra is not installed")
def test_what_if_starts_from_the_thresholds_the_default_backend_uses(tmp_path: Path) -> None:
    # `replay FILE --headless --what-if "high=0.85"` printed "thresholds now: high >= 0.75" and
    # re-banded "now" at 0.75 with the default (semantic) backend, whose fitted 0.90 routes the
    # turns: this turn was reported as changing from high/execute, a band it never had.
    session = tmp_path / "monday.toml"
    session.write_text(RECORDED, encoding="utf-8")
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    env = {"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = tui_router("replay", str(session), "--headless", "--what-if", "high=0.85", env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "thresholds now: high >= 0.9, medium >= 0.45; what-if: high >= 0.85, medium >= 0.45"
    assert lines[1] == "what-if: 0 of 1 routed turns would change band or action"
    # thresholds the config sets still win, and the local backend keeps the seeds' defaults
    local = tui_router("replay", str(session), "--headless", "--what-if", "high=0.85", "--backend", "local", env=env)
    assert local.stdout.splitlines()[:2] == [
        "thresholds now: high >= 0.75, medium >= 0.45; what-if: high >= 0.85, medium >= 0.45",
        "what-if: 1 of 1 routed turns would change band or action",
    ]
    (tmp_path / "set.toml").write_text("[policy]\nhigh = 0.8\n", encoding="utf-8")
    pinned = tui_router("replay", str(session), "--headless", "--what-if", "high=0.85", env={**env, "TUI_ROUTER_CONFIG": str(tmp_path / "set.toml")})
    assert pinned.stdout.splitlines()[0].startswith("thresholds now: high >= 0.8, medium >= 0.45;")


def test_commands_that_route_nothing_do_not_offer_routing_options(tmp_path: Path) -> None:
    # `models` and `doctor` --help listed --catalog and --backend, and `queue` those and --base-url
    # too; none of them did anything there (models/doctor ask the [systemone] server, queue sorts
    # the recorded margins). Now they are not offered, and a stray one is an error, not ignored.
    env = {"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    offered = {
        "models": {"--json", "--config", "--base-url"},
        "doctor": {"--json", "--config", "--base-url"},
        "queue": {"--json", "--limit", "--config"},
        "route": {"--json", "--args", "--config", "--catalog", "--backend", "--base-url"},
    }
    for command, options in offered.items():
        shown = tui_router(command, "--help", env=env)
        assert shown.returncode == 0
        listed = {word.rstrip(",") for word in shown.stdout.split() if word.startswith("--")} - {"--help"}
        assert listed == options, (command, listed)
    stray = tui_router("queue", str(tmp_path), "--backend", "bm25", env=env)
    assert stray.returncode == 2 and "unrecognized arguments: --backend bm25" in stray.stderr


def test_catalog_validate_counts_in_words_that_agree(tmp_path: Path) -> None:
    # `tui-router catalog validate support` said "1 tools + 2 escalation options in 2 categories",
    # and a catalog imported from a one-tool MCP server "1 tools + 0 escalation options in 1 categories".
    env = {"TUI_ROUTER_CONFIG": str(tmp_path / "none.toml")}
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    support = tui_router("catalog", "validate", "support", env=env)
    assert support.returncode == 0 and "'support', 1 tool + 2 escalation options in 2 categories," in support.stdout
    one = tmp_path / "one.toml"
    one.write_text('name = "one"\n[[tools]]\nid = "search_docs"\nwhen_to_use = "Search the docs."\ncategory = "docs"\n', encoding="utf-8")
    done = tui_router("catalog", "validate", str(one), env=env)
    assert done.returncode == 0 and "'one', 1 tool + 0 escalation options in 1 category, none option 'defer_to_llm'" in done.stdout
    demo = tui_router("catalog", "validate", "demo", env=env)
    assert "'demo', 40 tools + 2 escalation options in 9 categories," in demo.stdout
