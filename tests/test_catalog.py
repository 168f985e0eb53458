"""Catalog loading and validation: every problem is one clear line naming file, tool and field."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomli_w

from tui_router.catalog import NONE_DESCRIPTION, load_catalog
from tui_router.errors import CatalogError

GOOD_TOOL = {"id": "send_sms", "when_to_use": "Send a short text message to a phone number."}


def write(tmp_path: Path, data: dict | str, name: str = "cat.toml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else tomli_w.dumps(data), encoding="utf-8")
    return path


def problems_for(tmp_path: Path, data: dict | str) -> list[str]:
    with pytest.raises(CatalogError) as info:
        load_catalog(write(tmp_path, data))
    return info.value.lines()


def test_bundled_demo_catalog_shape() -> None:
    catalog = load_catalog("demo")
    tools = [t for t in catalog.tools if not t.is_escalation]
    assert len(tools) == 40
    assert {t.category for t in tools} == {"calendar", "code", "data", "email", "files", "notify", "tickets", "web"}
    assert all(30 <= len(t.when_to_use) <= 90 for t in tools)
    assert all(t.input_schema and t.input_schema["type"] == "object" for t in catalog.tools)
    assert set(catalog.escalation_ids) == {"ask_user", "human_review"}
    for a, b in [("search_inbox", "search_tickets"), ("create_event", "create_reminder"), ("send_sms", "send_push_notification"),
                 ("export_csv", "import_csv"), ("format_code", "lint_code"), ("fetch_url", "screenshot_page")]:
        assert a in catalog and b in catalog
    assert catalog.description_of("defer_to_llm") == NONE_DESCRIPTION


def test_bundled_support_catalog() -> None:
    catalog = load_catalog("support")
    assert [t.id for t in catalog.tools] == ["search_docs", "ask_user", "human_review"]


def test_duplicate_ids(tmp_path: Path) -> None:
    lines = problems_for(tmp_path, {"name": "x", "tools": [GOOD_TOOL, GOOD_TOOL]})
    assert lines == [f"{tmp_path / 'cat.toml'}: tools[1] (id 'send_sms'): field 'id' duplicates tools[0]"]


def test_malformed_id(tmp_path: Path) -> None:
    lines = problems_for(tmp_path, {"name": "x", "tools": [{**GOOD_TOOL, "id": "Send SMS"}]})
    assert len(lines) == 1 and "tools[0] (id 'Send SMS'): field 'id'" in lines[0] and "not a valid id" in lines[0]


def test_empty_when_to_use(tmp_path: Path) -> None:
    lines = problems_for(tmp_path, {"name": "x", "tools": [{**GOOD_TOOL, "when_to_use": "   "}]})
    assert lines == [f"{tmp_path / 'cat.toml'}: tools[0] (id 'send_sms'): field 'when_to_use' must not be empty"]


def test_missing_when_to_use(tmp_path: Path) -> None:
    lines = problems_for(tmp_path, {"name": "x", "tools": [{"id": "a_tool"}]})
    assert lines == [f"{tmp_path / 'cat.toml'}: tools[0] (id 'a_tool'): field 'when_to_use' is required"]


def test_unknown_risk(tmp_path: Path) -> None:
    lines = problems_for(tmp_path, {"name": "x", "tools": [{**GOOD_TOOL, "risk": "dangerous"}]})
    assert len(lines) == 1 and "field 'risk' unknown risk 'dangerous'" in lines[0] and "outbound" in lines[0]


def test_none_option_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    # re's `$` also matches before a final newline: the id check must match the whole string.
    lines = problems_for(tmp_path, {"name": "x", "none_option": "nope\n", "tools": [GOOD_TOOL]})
    assert lines == [f"{tmp_path / 'cat.toml'}:2: none_option 'nope\\n' is not a valid option id (e.g. 'nope')"]


def test_none_option_collision(tmp_path: Path) -> None:
    lines = problems_for(tmp_path, {"name": "x", "none_option": "send_sms", "tools": [GOOD_TOOL]})
    assert lines == [f"{tmp_path / 'cat.toml'}: tools[0] (id 'send_sms'): field 'id' collides with none_option 'send_sms'"]


def test_schema_not_a_table(tmp_path: Path) -> None:
    lines = problems_for(tmp_path, {"name": "x", "tools": [{**GOOD_TOOL, "schema": "object"}]})
    assert lines == [f"{tmp_path / 'cat.toml'}:6: tools[0] (id 'send_sms'): field 'schema' must be a table (a JSON Schema object)"]


def test_empty_catalog(tmp_path: Path) -> None:
    assert problems_for(tmp_path, {"name": "x"}) == [f"{tmp_path / 'cat.toml'}: the catalog has no tools (add [[tools]] tables)"]
    assert problems_for(tmp_path, {"name": "x", "tools": []}) == [f"{tmp_path / 'cat.toml'}: the catalog has no tools (add [[tools]] tables)"]


def test_not_toml(tmp_path: Path) -> None:
    lines = problems_for(tmp_path, "this is [not toml")
    assert len(lines) == 1 and "not valid TOML" in lines[0]


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "cat.toml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CatalogError, match="not UTF-8"):
        load_catalog(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="catalog file not found"):
        load_catalog(tmp_path / "nope.toml")


def test_unknown_name_lists_bundled() -> None:
    with pytest.raises(CatalogError, match="bundled: demo, support"):
        load_catalog("nosuchcatalog")


def test_misspelt_field_is_an_error_with_hint(tmp_path: Path) -> None:
    lines = problems_for(tmp_path, {"name": "x", "tools": [{**GOOD_TOOL, "keywrds": ["a"]}]})
    assert lines == [f"{tmp_path / 'cat.toml'}:6: tools[0] (id 'send_sms'): unknown field 'keywrds' (did you mean 'keywords'?)"]


def test_every_problem_reported_at_once(tmp_path: Path) -> None:
    data = {"name": "x", "tools": [{"id": "Bad"}, {**GOOD_TOOL, "risk": "nope"}, GOOD_TOOL]}
    lines = problems_for(tmp_path, data)
    # bad id + missing when_to_use, bad risk, and the third tool repeats the (invalid) second's id
    assert len(lines) == 4 and lines[-1].endswith(":12: tools[2] (id 'send_sms'): field 'id' duplicates tools[1] (line 7)")


def test_unrelated_extra_field_is_a_warning(tmp_path: Path) -> None:
    catalog = load_catalog(write(tmp_path, {"name": "x", "tools": [{**GOOD_TOOL, "owner": "ops"}]}))
    assert catalog.warnings and "unknown field 'owner'" in catalog.warnings[0]


def test_huge_catalog_loads_fast(tmp_path: Path) -> None:
    tools = [
        {"id": f"tool_{i}", "when_to_use": f"Do task number {i} for the {i % 37} team.", "category": f"c{i % 20}",
         "keywords": [f"k{i}", "alpha"], "schema": {"type": "object", "properties": {"x": {"type": "string"}}}}
        for i in range(10_000)
    ]
    path = write(tmp_path, {"name": "big", "tools": tools})
    started = time.perf_counter()
    catalog = load_catalog(path)
    elapsed = time.perf_counter() - started
    assert len(catalog.tools) == 10_000
    # behaviour, not a benchmark: a generous ceiling that only a pathological regression breaks
    assert elapsed < 5.0


def test_cli_validate_exit_codes(tmp_path: Path) -> None:
    bad = write(tmp_path, {"name": "x", "tools": [{"id": "Bad"}]})
    result = subprocess.run([sys.executable, "-m", "tui_router.cli", "catalog", "validate", str(bad)], capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "tools[0] (id 'Bad'): field 'id'" in result.stderr
    good = subprocess.run([sys.executable, "-m", "tui_router.cli", "catalog", "validate", "demo"], capture_output=True, text=True)
    assert good.returncode == 0 and "40 tools + 2 escalation options" in good.stdout
