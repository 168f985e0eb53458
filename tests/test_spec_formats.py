"""Statements of the shared FORMATS.md / DESIGN.md that had no test of their own, checked on real files
(and the CLI as a subprocess where the statement is about the CLI)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import tomli_w
from cli_harness import tui_router
from servers.scripted import ScriptedServer

from tui_router.catalog import NONE_DESCRIPTION, Risk, load_catalog
from tui_router.config import config_from_dict
from tui_router.errors import CatalogError, SessionError
from tui_router.route import Router
from tui_router.session import FallbackRecord, OutcomeStep, Turn, TurnDecision, load_session, save_session


def hermetic(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text('backend = "local"\n')
    return {"TUI_ROUTER_CONFIG": str(config), "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def write_catalog(path: Path, tools: list[dict], **head: object) -> Path:
    path.write_text(tomli_w.dumps({"name": "spec", **head, "tools": tools}))
    return path


# ---------------------------------------------------------------- catalog


def test_an_id_of_64_characters_is_valid_and_65_is_refused_by_catalog_validate(tmp_path: Path) -> None:
    ok = write_catalog(tmp_path / "ok.toml", [{"id": "a" + "b" * 63, "when_to_use": "Do a thing."}])
    result = tui_router("catalog", "validate", str(ok), env=hermetic(tmp_path))
    assert result.returncode == 0 and ": ok - catalog 'spec', 1 tools" in result.stdout
    long_id = "a" + "b" * 64
    bad = write_catalog(tmp_path / "bad.toml", [{"id": "send_sms", "when_to_use": "Text."}, {"id": long_id, "when_to_use": "Do a thing."}])
    result = tui_router("catalog", "validate", str(bad), env=hermetic(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    # file, index and id, field: one line for the one problem
    assert f"bad.toml: tools[1] (id '{long_id}'): field 'id'" in result.stderr
    assert "at most 64 characters" in result.stderr


@pytest.mark.parametrize("tool_id", ["send_sms", "a", "crm.contacts:search-v2", "z9"])
def test_ids_of_the_pattern_are_accepted(tmp_path: Path, tool_id: str) -> None:
    catalog = load_catalog(write_catalog(tmp_path / "c.toml", [{"id": tool_id, "when_to_use": "Do."}]))
    assert catalog.get(tool_id) is not None


@pytest.mark.parametrize("tool_id", ["Send_sms", "9lives", "_x", "send sms", "envoyer_été", "a\tb", ""])
def test_ids_outside_the_pattern_are_refused(tmp_path: Path, tool_id: str) -> None:
    with pytest.raises(CatalogError) as caught:
        load_catalog(write_catalog(tmp_path / "c.toml", [{"id": tool_id, "when_to_use": "Do."}]))
    assert any("tools[0]" in line and "field 'id'" in line for line in caught.value.problems)


def test_a_tool_needs_only_id_and_when_to_use_and_risk_defaults_to_read(tmp_path: Path) -> None:
    catalog = load_catalog(write_catalog(tmp_path / "c.toml", [{"id": "look_up", "when_to_use": "Look a thing up."}]))
    (tool,) = catalog.tools
    assert tool.risk is Risk.read
    assert (tool.category, tool.keywords, tool.examples, tool.input_schema) == (None, (), (), None)
    assert catalog.none_option == "defer_to_llm" and catalog.option_ids == ["look_up", "defer_to_llm"]


def test_a_custom_none_option_is_offered_in_the_question_with_the_fixed_description(tmp_path: Path) -> None:
    path = write_catalog(
        tmp_path / "c.toml",
        [
            {"id": "send_sms", "when_to_use": "Send a short text message to a phone number.", "risk": "outbound"},
            {"id": "human_review", "when_to_use": "Hand the request to a person.", "risk": "escalation"},
        ],
        none_option="nothing_fits",
    )
    catalog = load_catalog(path)
    assert "nothing_fits" not in [t.id for t in catalog.tools]  # not listed under [[tools]]
    with ScriptedServer() as server:
        router = Router(catalog, config_from_dict({"backend": "systemone", "systemone": {"base_url": server.base_url, "probe": False}}))
        try:
            router.route("Text Jordan that the deploy finished.")
        finally:
            router.backend.close()
        (request,) = server.posts
    criteria = request.json()["questions"]["tool"]["criteria"]
    assert criteria["nothing_fits"] == NONE_DESCRIPTION == "None of the allowlisted tools fits; continue with the main application LLM"
    assert criteria["send_sms"] == "Send a short text message to a phone number."
    assert "defer_to_llm" not in criteria


def test_a_catalog_with_a_byte_order_mark_and_crlf_line_ends_validates(tmp_path: Path) -> None:
    text = 'name = "crlf"\n\n[[tools]]\nid = "send_sms"\nwhen_to_use = "Send a text."\nkeywords = ["text", "sms"]\n'
    path = tmp_path / "crlf.toml"
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    result = tui_router("catalog", "validate", str(path), env=hermetic(tmp_path))
    assert result.returncode == 0, result.stderr
    assert load_catalog(path).get("send_sms").keywords == ("text", "sms")


# ---------------------------------------------------------------- session


def test_toml_date_time_literals_in_a_hand_written_session_are_read_as_text(tmp_path: Path) -> None:
    """Found: `at = 2026-11-30T10:04:20Z` (TOML's own date-time, unquoted) refused the whole file with
    "must be a valid string"; a person writing cases by hand uses it, and the spec shows the same value."""
    path = tmp_path / "cases.toml"
    path.write_text(
        '[session]\nid = "cases"\ncatalog = "demo"\ncreated = 2026-11-30T10:04:12Z\n\n'
        '[[turns]]\nmessage = "Text Jordan that the deploy finished."\nlabel = "send_sms"\nat = 2026-11-30T10:04:20Z\n\n'
        '[[turns]]\nmessage = "hello"\nlabel = "defer_to_llm"\nat = 2026-11-30T12:04:20+02:00\n'
        '[turns.decision]\noutcome = "fallback_done"\n[[turns.decision.history]]\noutcome = "declined"\nat = 2026-11-30T10:05:00Z\n'
        '[turns.fallback]\ncommand = ["llm"]\nat = 2026-11-30\n'
    )
    session = load_session(path)
    assert session.session.created == "2026-11-30T10:04:12Z"
    assert [t.at for t in session.turns] == ["2026-11-30T10:04:20Z", "2026-11-30T12:04:20+02:00"]
    assert session.turns[1].decision.history[0].at == "2026-11-30T10:05:00Z"
    assert session.turns[1].fallback.at == "2026-11-30"
    saved = tomllib.loads(save_session(session, tmp_path / "out.toml").read_text())
    assert saved["turns"][0]["at"] == "2026-11-30T10:04:20Z" and saved["session"]["created"] == "2026-11-30T10:04:12Z"
    result = tui_router("eval", str(path), "--catalog", "demo", env=hermetic(tmp_path))
    assert result.returncode == 0, result.stderr


def test_a_bad_session_head_is_reported_like_a_bad_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[session]\nid = 3\ncatalog = ["demo"]\n\n[[turns]]\nmessage = 4\n')
    with pytest.raises(SessionError) as caught:
        load_session(path)
    lines = caught.value.problems
    assert f"{path}: [session] field 'id' must be a valid string" in lines
    assert f"{path}: [session] field 'catalog' must be a valid string" in lines
    assert f"{path}: turns[0]: field 'message' must be a valid string" in lines
    assert not any("Input should be" in line for line in lines)


def test_a_file_of_turns_only_is_an_eval_set_named_by_its_file(tmp_path: Path) -> None:
    path = tmp_path / "ops-cases.toml"
    path.write_text('[[turns]]\nmessage = "Text Jordan that the deploy finished."\nlabel = "send_sms"\ntags = ["notify"]\n\n[[turns]]\nmessage = "unlabelled"\n')
    session = load_session(path)
    assert session.id == "ops-cases" and session.session.catalog is None
    assert [t.message for t in session.labelled()] == ["Text Jordan that the deploy finished."]
    result = tui_router("eval", str(path), "--catalog", "demo", env=hermetic(tmp_path))
    assert result.returncode == 0, result.stderr


def test_a_newer_format_version_and_its_keys_survive_a_load_and_save(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[session]\nid = "s"\nversion = 2\nowner = "dana"\n\n[[turns]]\nmessage = "m"\nmood = "calm"\n')
    session = load_session(path)
    assert session.session.version == 2
    saved = tomllib.loads(save_session(session).read_text())
    assert saved["session"] == {"id": "s", "version": 2, "owner": "dana"}
    assert saved["turns"] == [{"message": "m", "mood": "calm"}]


def test_the_writer_leaves_out_empty_values_keeps_key_order_and_writes_a_version(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[session]\nid = "s"\ncatalog = "demo"\n\n[[turns]]\nmessage = "Text Jordan."\nlabel = "send_sms"\nacceptable = []\ntags = []\n')
    session = load_session(path)
    session.turns.append(
        Turn(
            message="Pay it",
            decision=TurnDecision(
                candidates=["pay_invoice"],
                choice="pay_invoice",
                probabilities={"pay_invoice": 0.9, "defer_to_llm": 0.1},
                confidence=0.8,
                band="high",
                action="confirm",
                outcome="declined",
                history=[OutcomeStep(outcome="proposed")],
            ),
            fallback=FallbackRecord(command=["llm"], exit_code=0, output="ok"),
        )
    )
    text = save_session(session).read_text()
    data = tomllib.loads(text)
    assert text.startswith("[session]\n")
    assert data["session"] == {"id": "s", "catalog": "demo", "version": 1}
    assert data["turns"][0] == {"message": "Text Jordan.", "label": "send_sms"}  # empty lists left out
    second = data["turns"][1]
    assert list(second) == ["message", "decision", "fallback"]
    assert "error" not in second["decision"] and "reported_confidence" not in second["decision"]
    assert list(second["decision"])[:2] == ["candidates", "choice"]  # (TOML puts sub-tables last)
    assert second["fallback"] == {"command": ["llm"], "exit_code": 0, "output": "ok"}
    assert load_session(path).turns[1].decision.outcome == "declined"  # what was written reads back


@pytest.mark.parametrize(
    ("table", "key", "value"),
    [("decision", "band", "great"), ("decision", "action", "run"), ("decision", "outcome", "done"), ("arguments", "source", "model")],
)
def test_values_outside_the_listed_ones_are_refused_with_turn_and_field(tmp_path: Path, table: str, key: str, value: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(f'[[turns]]\nmessage = "ok"\n\n[[turns]]\nmessage = "m"\n[turns.{table}]\n{key} = "{value}"\n')
    before = path.read_bytes()
    result = tui_router("eval", str(path), "--catalog", "demo", env=hermetic(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"turns[1]: field '{table}.{key}' must be" in result.stderr
    assert path.read_bytes() == before
