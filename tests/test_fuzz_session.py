"""Property tests: session files written by the product's own writer, then read back whole or corrupted.

A session with hostile text in every free-text field (messages, tags, errors, fallback output: any
unicode, control characters, CR LF, TOML-looking text) saved by `save_session` loads back as the
same session. The same file with one byte replaced, inserted or deleted, or cut short, at any
offset, loads as a session or fails with a SessionError of one-line sentences: never another
exception, and the file on disk is left exactly as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui_router.errors import SessionError
from tui_router.session import FallbackRecord, Session, SessionInfo, Turn, TurnDecision, load_session, save_session

TRICKY = ["\r\n", "\r", "\n", '"""', "'''", "\\", "\\u0000", "[[turns]]", "[session]\nid = 'x'", "# not a comment", "\x00",
          "\x1b[2J", "\u2028", "\ufeff", "\U0001f600", "key = 1", "=", "\t", " ", "é", "e\u0301"]
text = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(TRICKY)), max_size=6).map("".join)
OPTION = st.sampled_from(["send_sms", "send_email", "defer_to_llm", "human_review", "web_search"])
PROB = st.floats(0, 1).map(lambda p: round(p, 6))


@st.composite
def decisions(draw: st.DrawFn) -> TurnDecision:
    options = draw(st.lists(OPTION, min_size=1, max_size=4, unique=True))
    return TurnDecision(
        candidates=options,
        choice=draw(st.sampled_from(options)),
        probabilities={o: draw(PROB) for o in options},
        confidence=draw(st.none() | PROB),
        band=draw(st.sampled_from(["high", "medium", "low", "unresolved"])),
        action=draw(st.sampled_from(["execute", "confirm", "escalate", "fallback"])),
        outcome=draw(st.sampled_from(["proposed", "approved", "declined", "escalated", "fallback_done", "pending"])),
        error=draw(text),
        caution=draw(st.none() | text.filter(bool)),
        latency_ms=draw(st.none() | st.floats(0, 1e6).map(lambda v: round(v, 3))),
        model=draw(st.none() | text.filter(bool)),
    )


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    turns = []
    for _ in range(draw(st.integers(1, 3))):
        turns.append(
            Turn(
                message=draw(text),  # empty too: the writer once dropped it, then the reader refused the file
                label=draw(st.none() | OPTION),
                tags=draw(st.lists(text.filter(bool), max_size=2)),
                decision=draw(st.none() | decisions()),
                fallback=draw(st.none() | st.builds(FallbackRecord, command=st.lists(text.filter(bool), min_size=1, max_size=2),
                                                    exit_code=st.none() | st.integers(-255, 255), output=text, stderr=text)),
            )
        )
    info = SessionInfo(id="fuzz-session", catalog="demo", created="2026-11-30T10:04:12Z", backend=draw(st.sampled_from(["local", "bm25"])))
    return Session(session=info, turns=turns)


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def same(loaded: Session, saved: Session) -> None:
    assert loaded.session == saved.session
    assert loaded.turns == saved.turns


@FUZZ
@given(session=sessions())
def test_a_saved_session_loads_back_the_same(tmp_path: Path, session: Session) -> None:
    path = save_session(session, tmp_path / "round.toml")
    same(load_session(path), session)


def corrupt(data: bytes, how: str, offset: int, byte: int) -> bytes:
    offset = offset % (len(data) + 1)
    if how == "replace" and offset < len(data):
        return data[:offset] + bytes([byte]) + data[offset + 1 :]
    if how == "delete":
        return data[:offset] + data[offset + 1 :]
    if how == "insert":
        return data[:offset] + bytes([byte]) + data[offset:]
    return data[:offset]  # truncate


SEED_SESSION = Session(
    session=SessionInfo(id="corrupt-me", catalog="demo", created="2026-11-30T10:04:12Z", backend="local"),
    turns=[
        Turn(message="Text Jordan that the deploy finished.", label="send_sms", tags=["notify"],
             decision=TurnDecision(candidates=["send_sms", "send_email"], choice="send_sms",
                                   probabilities={"send_sms": 0.91, "send_email": 0.05, "defer_to_llm": 0.04}, confidence=0.865,
                                   band="high", action="confirm", outcome="approved", latency_ms=3.2)),
        Turn(message='multi\nline "quoted" [brackets] 中文 \x1b[2J\r\nend',
             decision=TurnDecision(choice="defer_to_llm", band="low", action="fallback", outcome="fallback_done"),
             fallback=FallbackRecord(command=["llm", "-m", "local"], exit_code=0, output="hello\r\nworld", duration_ms=12.5)),
    ],
)


@pytest.fixture(scope="module")
def seed_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = save_session(SEED_SESSION, tmp_path_factory.mktemp("seed") / "seed.toml")
    same(load_session(path), SEED_SESSION)
    return path.read_bytes()


@settings(FUZZ, max_examples=400)
@given(how=st.sampled_from(["replace", "delete", "insert", "truncate"]), offset=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_one_corrupt_byte_loads_or_fails_in_sentences_and_leaves_the_file(tmp_path: Path, seed_bytes: bytes, how: str, offset: int, byte: int) -> None:
    path = tmp_path / "corrupt.toml"
    bad = corrupt(seed_bytes, how, offset, byte)
    path.write_bytes(bad)
    before = sorted(p.name for p in tmp_path.iterdir())
    try:
        loaded = load_session(path)
    except SessionError as exc:
        lines = exc.lines()
        assert lines and all(isinstance(line, str) and line.strip() for line in lines)
        assert all("\n" not in line and "Traceback" not in line for line in lines), lines
        assert all(len(line) <= 400 for line in lines), max(lines, key=len)
    else:
        assert isinstance(loaded, Session)
        if bad == seed_bytes:
            same(loaded, SEED_SESSION)
    assert path.read_bytes() == bad  # never rewritten, repaired or truncated
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # and nothing left beside it
