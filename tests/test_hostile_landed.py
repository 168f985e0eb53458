"""Hostile input against what landed on 2026-12-01: catalog validate's advice on a hostile catalog,
the short-API-key scrubber, copied-file detection, invisible-only messages and BOMs.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_harness import tui_router

from tui_router.catalog import authoring_warnings, load_catalog


def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    return {"TUI_ROUTER_CONFIG": str(tmp_path / "empty.toml"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def _catalog(tmp_path: Path, texts: list[str], name: str = "hostile.toml") -> Path:
    lines = ['name = "hostile"', ""]
    for i, text in enumerate(texts):
        lines += ["[[tools]]", f'id = "tool_{i}"', f"when_to_use = {json.dumps(text)}", 'risk = "read"', ""]
    path = tmp_path / name
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


# -- catalog validate's advice ----------------------------------------------------------------------


def test_many_copies_of_one_tool_text_are_one_near_duplicate_line_each(tmp_path: Path) -> None:
    # 10,000 copies of one when_to_use were 640,000 lines (each tool paired with up to 64 earlier
    # ones) and 11 s; one line per tool naming the first, and saying there are others
    path = _catalog(tmp_path, ["Send a message to the team about the project report"] * 300)
    warnings = [w for w in authoring_warnings(load_catalog(str(path))) if "have the same when_to_use" in w]
    assert len(warnings) == 299
    assert all("and tools[0] (id 'tool_0')" in w for w in warnings), warnings[:3]
    assert "tools[1] (id 'tool_1') and tools[0] (id 'tool_0') have the same when_to_use: the router" in warnings[0]
    assert "tools[2] (id 'tool_2') and tools[0] (id 'tool_0') have the same when_to_use (and other earlier tools like it)" in warnings[1]


def test_the_closest_earlier_tool_is_the_one_named(tmp_path: Path) -> None:
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    path = _catalog(tmp_path, [base + " lambda mu", base + " omicron", base])
    warnings = [w for w in authoring_warnings(load_catalog(str(path))) if w.count("tools[") == 2 and "tools[2]" in w]
    # tools[2] shares 10 of 11 words with tools[1] and 10 of 12 with tools[0]: tools[1] is the closer
    assert len(warnings) == 1 and "tools[2] (id 'tool_2') and tools[1] (id 'tool_1')" in warnings[0], warnings


def test_advice_lines_hold_control_characters_as_escapes(tmp_path: Path) -> None:
    path = tmp_path / "ctl.toml"
    text = "Send \\u001b[31mred\\u001b[0m text \\u202e now to the team"
    example = "ring \\u0007 bell \\u202e x"
    path.write_text(
        'name = "ctl"\n'
        f'[[tools]]\nid = "a_tool"\nwhen_to_use = "{text}"\nrisk = "read"\nexamples = ["{example}"]\n'
        f'[[tools]]\nid = "b_tool"\nwhen_to_use = "{text}"\nrisk = "read"\nexamples = ["{example}"]\n',
        encoding="utf-8",
    )
    done = tui_router("catalog", "validate", str(path), env=env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "the example 'ring \\x07 bell \\u202e x' is also one of tools[0]" in done.stderr
    assert not any(ch in done.stderr + done.stdout for ch in "\x1b\x07\u202e")
