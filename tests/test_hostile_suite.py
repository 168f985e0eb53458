"""Hostile-input suite (issue 14): generated malformed and adversarial catalogs, configs and sessions.

Each case is one valid document with one defect (a wrong type, a missing or unknown field, an
out-of-range or non-finite number, deep nesting, bad bytes, a truncation ...), made by a seeded
generator so the suite is the same on every run. Every case goes through the real CLI entry point
and must end in exit 2, only `tui-router: ...` lines on stderr (one sentence each), no
traceback, and the file exactly as it was.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui_router import tomlio
from tui_router.cli import main
from tui_router.errors import CatalogError

SEED = 14

CATALOG: dict[str, Any] = {
    "name": "hostile",
    "description": "A small valid catalog the generator breaks one way at a time",
    "tools": [
        {"id": "send_sms", "when_to_use": "Send a short text message.", "risk": "outbound", "keywords": ["text"], "examples": ["Text Jo."],
         "schema": {"type": "object", "required": ["to"], "properties": {"to": {"type": "string", "maxLength": 20}}}},
        {"id": "read_file", "when_to_use": "Read a file.", "category": "files"},
        {"id": "human_review", "when_to_use": "Hand it to a person.", "risk": "escalation"},
    ],
}
CONFIG: dict[str, Any] = {
    "catalog": "demo",
    "backend": "bm25",
    "retrieval": {"top_k": 5, "direct_max": 8},
    "policy": {"high": 0.75, "medium": 0.45, "confidence": "reference"},
    "systemone": {"base_url": "http://127.0.0.1:9/v1", "timeout": 5.0, "max_retries": 1},
    "fallback": {"command": ["echo"], "timeout": 10.0, "output_cap": 1000},
}
SESSION: dict[str, Any] = {
    "session": {"id": "hostile", "catalog": "demo", "created": "2026-11-30T10:04:12Z"},
    "turns": [
        {"message": "Text Jordan that the deploy finished.", "label": "send_sms",
         "decision": {"choice": "send_sms", "probabilities": {"send_sms": 0.9, "defer_to_llm": 0.1}, "confidence": 0.8,
                      "band": "high", "action": "execute", "outcome": "proposed"}},
        {"message": "what is the capital of peru", "label": "defer_to_llm"},
    ],
}

# Values of every TOML type, and the hostile ones, to put where another type belongs.
NOT_TEXT = [{"a": 1}, [1, 2], [[]], 7, -1, 3.5, float("nan"), float("inf"), True, datetime(2026, 1, 1)]
BAD_IDS = ["", "UPPER", "名前", "x" * 70, "\x1b]0;PWNED\x07", "1starts-with-digit", "has space"]
NOT_NUMBER = [{"a": 1}, [1, 2], "abc", "", float("nan"), float("inf"), float("-inf"), datetime(2026, 1, 1)]
NOT_LIST = [{"a": 1}, 7, float("nan"), datetime(2026, 1, 1), True]
NOT_TABLE = [[1, 2], 7, "text", float("nan"), True]
KINDS = {"text": NOT_TEXT, "id": NOT_TEXT + BAD_IDS, "number": NOT_NUMBER, "list": NOT_LIST, "table": NOT_TABLE}


def nested(depth: int, kind: str) -> str:
    return "[" * depth + "]" * depth if kind == "array" else "{a = " * depth + "1" + "}" * depth


def _set(doc: dict, path: tuple, value: Any) -> dict:
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def _drop(doc: dict, path: tuple) -> dict:
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return doc


def _dump(doc: dict) -> bytes:
    return _dumps_any(doc).encode("utf-8")


def _dumps_any(doc: dict) -> str:
    """tomli-w, except for nan/inf, which it writes fine, and values it cannot write (caught by callers)."""
    return tomli_w.dumps(doc)


def text_defects(base: dict, rng: random.Random) -> list[tuple[str, bytes]]:
    """Defects below the TOML level: bytes, syntax, nesting, size tricks."""
    good = _dump(base)
    cut = rng.randrange(10, len(good) - 5)
    return [
        ("truncated-in-a-string", good.split(b'"', 3)[0] + b'"' + good.split(b'"', 3)[1]),
        ("cut-at-random", good[:cut] + b"= = ="),
        ("invalid-utf8", good[:cut] + b"\xff\xfe\xc3\x28" + good[cut:]),
        ("nul-bytes", good[:cut] + b"\x00\x00" + good[cut:]),
        ("latin1", "# café\n".encode("latin-1") + good),
        ("bom-then-garbage", b"\xef\xbb\xbf\xef\xbb\xbf" + good),
        ("utf16", good.decode().encode("utf-16")),
        ("duplicate-key", good + b'\n[[tools]]\nid = "x"\nid = "y"\n' if b"[[tools]]" in good else good + b"\nzz = 1\nzz = 2\n"),
        ("unclosed-table", b"[session\n" + good),
        ("nested-array-60", good + f"\ndeep = {nested(60, 'array')}\n".encode() if b"[[tools]]" not in good else f"deep = {nested(60, 'array')}\n".encode() + good),
        ("nested-array-5000", f"deep = {nested(5000, 'array')}\n".encode() + good),
        ("nested-table-400", f"deep = {nested(400, 'table')}\n".encode() + good),
        ("dotted-3000", good + b"\n[" + b".".join([b"k"] * 3000) + b"]\nx = 1\n"),
        ("nan-top-level", b"zz_number = nan\n" + good),
        ("empty-file-of-spaces", b"   \n\t\n" + b"\x1b[2J" + b"\n"),
    ]


def field_defects(base: dict, fields: dict[tuple, str], required: list[tuple], rng: random.Random, n: int) -> list[tuple[str, dict]]:
    """Required fields dropped, then `n` in all with a value of the wrong kind in a random field."""
    out = [(f"drop-{'.'.join(map(str, path))}", _drop(base, path)) for path in required]
    paths = sorted(fields)
    while len(out) < n:
        path = rng.choice(paths)
        value = rng.choice(KINDS[fields[path]])
        out.append((f"wrong-{'.'.join(map(str, path))}-{type(value).__name__}-{len(out)}", _set(base, path, value)))
    return out


def build_cases() -> list[tuple[str, str, bytes]]:
    rng = random.Random(SEED)
    cases: list[tuple[str, str, bytes]] = []

    # catalogs: every field given a wrong value, required ones dropped, and structural breaks
    cat_fields = {("name",): "text", ("description",): "text", ("none_option",): "id", ("tools",): "list", ("tools", 0): "table",
                  ("tools", 0, "id"): "id", ("tools", 0, "when_to_use"): "text", ("tools", 0, "risk"): "id", ("tools", 0, "keywords"): "list",
                  ("tools", 0, "schema"): "table", ("tools", 1, "category"): "text", ("tools", 0, "examples"): "list"}
    cat_required = [("tools",), ("tools", 0, "id"), ("tools", 0, "when_to_use")]
    wrong = field_defects(CATALOG, cat_fields, cat_required, rng, 36)
    wrong += [
        ("duplicate-ids", _set(CATALOG, ("tools", 1, "id"), "send_sms")),
        ("id-is-none-option", _set(CATALOG, ("tools", 1, "id"), "defer_to_llm")),
        ("no-tools", _set(CATALOG, ("tools",), [])),
        ("unknown-risk", _set(CATALOG, ("tools", 0, "risk"), "dangerous")),
        ("typo-field", _set(CATALOG, ("tools", 0, "when_to_us"), "x")),
        ("schema-nan", _set(CATALOG, ("tools", 0, "schema", "properties", "to", "maxLength"), float("nan"))),
        ("schema-inf", _set(CATALOG, ("tools", 0, "schema", "minimum"), float("-inf"))),
    ]
    cases += [("catalog", name, _safe_dump(doc)) for name, doc in wrong]
    cases += [("catalog", name, data) for name, data in text_defects(CATALOG, rng)]

    # configs: wrong types and ranges for every section
    cfg_fields = {("catalog",): "text", ("backend",): "id", ("retrieval", "top_k"): "number", ("retrieval", "direct_max"): "number",
                  ("policy", "high"): "number", ("policy", "medium"): "number", ("policy", "confidence"): "id", ("systemone", "base_url"): "id",
                  ("systemone", "timeout"): "number", ("systemone", "max_retries"): "number", ("fallback", "command"): "list",
                  ("fallback", "timeout"): "number", ("fallback", "output_cap"): "number", ("retrieval",): "table", ("policy",): "table"}
    wrong = field_defects(CONFIG, cfg_fields, [], rng, 40)  # every key is optional: nothing to drop
    wrong += [
        ("high-nan", _set(CONFIG, ("policy", "high"), float("nan"))),
        ("timeout-inf", _set(CONFIG, ("systemone", "timeout"), float("inf"))),
        ("medium-above-high", _set(CONFIG, ("policy", "medium"), 0.9)),
        ("top-k-zero", _set(CONFIG, ("retrieval", "top_k"), 0)),
        ("negative-timeout", _set(CONFIG, ("fallback", "timeout"), -1.0)),
        ("secret-header", _set(CONFIG, ("systemone", "headers"), {"Authorization": "Bearer sk-live"})),
        ("unknown-key", _set(CONFIG, ("polcy",), {"high": 0.5})),
        ("unknown-nested-key", _set(CONFIG, ("policy", "hihg"), 0.5)),
        ("not-a-url", _set(CONFIG, ("systemone", "base_url"), "ftp://example.com")),
    ]
    cases += [("config", name, _safe_dump(doc)) for name, doc in wrong]
    cases += [("config", name, data) for name, data in text_defects(CONFIG, rng) if name != "empty-file-of-spaces"]

    # sessions
    ses_fields = {("session",): "table", ("session", "id"): "text", ("session", "catalog"): "text", ("turns",): "list", ("turns", 0): "table",
                  ("turns", 0, "message"): "text", ("turns", 0, "label"): "text", ("turns", 0, "acceptable"): "list", ("turns", 0, "decision"): "table",
                  ("turns", 0, "decision", "band"): "id", ("turns", 0, "decision", "probabilities"): "table",
                  ("turns", 0, "decision", "confidence"): "number", ("turns", 0, "decision", "action"): "id"}
    wrong = field_defects(SESSION, ses_fields, [("turns", 0, "message")], rng, 40)
    wrong += [
        ("label-not-an-option", _set(SESSION, ("turns", 0, "label"), "send_smss")),
        ("other-catalog", _set(SESSION, ("session", "catalog"), "some-other-catalog")),
        ("probability-nan", _set(SESSION, ("turns", 0, "decision", "probabilities", "send_sms"), float("nan"))),
        ("typo-key", _set(SESSION, ("turns", 0, "lable"), "send_sms")),
    ]
    cases += [("session", name, _safe_dump(doc)) for name, doc in wrong]
    cases += [("session", name, data) for name, data in text_defects(SESSION, rng)]
    return cases


def _safe_dump(doc: dict) -> bytes:
    try:
        return _dump(doc)
    except (TypeError, ValueError):  # a value tomli-w refuses: put it in by hand
        return (tomli_w.dumps({k: v for k, v in doc.items() if _writable(v)}) + "\nbroken = [1, 'a'\n").encode()


def _writable(value: Any) -> bool:
    try:
        tomli_w.dumps({"v": value})
        return True
    except (TypeError, ValueError):
        return False


CASES = build_cases()


def _command(kind: str, path: Path) -> list[str]:
    if kind == "catalog":
        return ["catalog", "validate", str(path)]
    if kind == "config":
        return ["--config", str(path), "route", "--backend", "bm25", "hello"]
    # --strict: a label that is no option and another catalog's name are refused there (without it
    # replay runs them, notes them and leaves the turns unscored: test_replay_catalog_change.py)
    return ["replay", "--headless", "--strict", "--backend", "bm25", str(path)]


def test_the_suite_is_big_enough():
    kinds = [k for k, _, _ in CASES]
    assert len(CASES) >= 100
    assert min(kinds.count(k) for k in ("catalog", "config", "session")) >= 30
    assert len({n for _, n, _ in CASES}) > 60  # distinct defects, not one repeated


ACCEPTED: dict[str, Callable[[str], bool]] = {}  # none: every generated case must be refused


@pytest.mark.parametrize(("kind", "name", "data"), CASES, ids=[f"{k}-{n}" for k, n, _ in CASES])
def test_hostile_input_is_refused_in_sentences(kind, name, data, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TUI_ROUTER_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / f"{kind}.toml"
    path.write_bytes(data)
    code = main(_command(kind, path))
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines and all(line.startswith("tui-router: ") for line in lines), err
    assert all("\x1b" not in line for line in lines)
    assert path.read_bytes() == data  # nothing was written back
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name] + (["xdg"] if (tmp_path / "xdg").exists() else []))


@pytest.mark.parametrize(("kind", "doc"), [("catalog", CATALOG), ("config", CONFIG), ("session", SESSION)])
def test_the_unbroken_documents_are_accepted(kind, doc, tmp_path, capsys, monkeypatch):
    """The control: without its defect each document is fine, so the defect is what the CLI refuses."""
    monkeypatch.delenv("TUI_ROUTER_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / f"{kind}.toml"
    path.write_bytes(_dump(doc))
    code = main(_command(kind, path))
    err = capsys.readouterr().err
    assert code in (0, 1) and "Traceback" not in err, err  # replay: 1 only when a recorded-right turn is now wrong


# -- property-based: whatever the bytes, the reader answers with data or one sentence ------------



TOKENS = ["[", "]", "[[", "]]", "{", "}", "=", ",", ".", '"', "'", '"""', "\n", " ", "a", "b.c", "1", "-1", "1e999", "nan", "inf", "-inf",
          "true", "1979-05-27T07:32:00Z", "\ufeff", "\x00", "\x1b", "#", "tools", "id", "名"]
toml_ish = st.lists(st.sampled_from(TOKENS), max_size=80).map("".join)


def _depth(value, depth=0) -> int:
    if isinstance(value, dict):
        return max([_depth(v, depth + 1) for v in value.values()], default=depth + 1)
    if isinstance(value, list):
        return max([_depth(v, depth + 1) for v in value], default=depth + 1)
    return depth


def _finite(value) -> bool:
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return not isinstance(value, float) or value == value and abs(value) != float("inf")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=400), toml_ish.map(lambda t: t.encode("utf-8"))))
def test_reader_gives_data_within_the_limits_or_one_sentence(data, tmp_path):
    path = tmp_path / "x.toml"
    path.write_bytes(data)
    try:
        parsed = tomlio.read_toml_file(path, "catalog", CatalogError)
    except CatalogError as exc:
        lines = exc.lines()
        # `file: ...`, or `file:LINE: ...` for a syntax error on a known line
        assert len(lines) == 1 and re.match(rf"{re.escape(str(path))}(:\d+)?: ", lines[0]) and "\n" not in lines[0]
    else:
        assert isinstance(parsed, dict) and _depth(parsed) <= tomlio.MAX_DEPTH + 1 and _finite(parsed)
    assert path.read_bytes() == data
