"""Retrieval: BM25 candidates, direct mode, the escalation fallback, tokenisation."""

from __future__ import annotations

import pytest

from tui_router.catalog import Catalog, Tool, load_catalog
from tui_router.config import RetrievalConfig
from tui_router.retrieve import RetrievalMode, Retriever
from tui_router.textnorm import tokenize


@pytest.fixture(scope="module")
def demo_retriever() -> Retriever:
    return Retriever(load_catalog("demo"))


@pytest.mark.parametrize(
    ("message", "expected", "distractor"),
    [
        ("search my inbox for the email from Ravi about invoices", "search_inbox", "search_tickets"),
        ("search the helpdesk tickets for the Globex outage", "search_tickets", "search_inbox"),
        ("schedule a meeting with the design team on Friday", "create_event", "create_reminder"),
        ("remind me to water the plants at 6", "create_reminder", "create_event"),
        ("send an SMS to +44 7700 900123", "send_sms", "send_push_notification"),
        ("push a notification to all app users about the sale", "send_push_notification", "send_sms"),
        ("export the orders table to CSV", "export_csv", "import_csv"),
        ("import customers.csv into the contacts table", "import_csv", "export_csv"),
        ("reformat main.go with gofmt", "format_code", "lint_code"),
        ("lint the frontend with eslint and list the warnings", "lint_code", "format_code"),
        ("fetch the HTML of https://example.org", "fetch_url", "screenshot_page"),
        ("take a screenshot of our landing page", "screenshot_page", "fetch_url"),
    ],
)
def test_distractor_pairs_rank_the_right_tool_first(demo_retriever: Retriever, message: str, expected: str, distractor: str) -> None:
    retrieval = demo_retriever.retrieve(message)
    ids = [c.id for c in retrieval.candidates]
    assert retrieval.mode is RetrievalMode.bm25
    assert ids[0] == expected
    assert ids.index(expected) < (ids.index(distractor) if distractor in ids else 99)
    scores = {c.id: c.score for c in retrieval.candidates}
    assert scores[expected] > scores.get(distractor, 0.0)


def test_top_k_plus_escalation_options(demo_retriever: Retriever) -> None:
    retrieval = demo_retriever.retrieve("email the team about the new calendar event and the csv export")
    tools = [c for c in retrieval.candidates if c.risk.value != "escalation"]
    assert len(tools) == 5
    assert [c.id for c in retrieval.candidates][-2:] == ["ask_user", "human_review"]


def test_no_match_gives_escalation_options(demo_retriever: Retriever) -> None:
    retrieval = demo_retriever.retrieve("zzqx vlorp")
    assert retrieval.mode is RetrievalMode.escalation
    assert [c.id for c in retrieval.candidates] == ["ask_user", "human_review"]
    assert retrieval.ranked == []


def test_always_include() -> None:
    retriever = Retriever(load_catalog("demo"), RetrievalConfig(always_include=["web_search"], include_escalation=False))
    ids = [c.id for c in retriever.retrieve("reformat main.go with gofmt").candidates]
    assert "web_search" in ids and "ask_user" not in ids


def test_direct_mode_offers_every_tool() -> None:
    catalog = load_catalog("support")
    retrieval = Retriever(catalog).retrieve("how do credits work?")
    assert retrieval.mode is RetrievalMode.direct
    assert sorted(c.id for c in retrieval.candidates) == ["ask_user", "human_review", "search_docs"]


def test_direct_max_threshold() -> None:
    tools = tuple(Tool(id=f"t{i}", when_to_use=f"Tool number {i} does thing {i}.") for i in range(9))
    catalog = Catalog(name="nine", tools=tools)
    assert Retriever(catalog, RetrievalConfig(direct_max=9)).retrieve("number 3").mode is RetrievalMode.direct
    assert Retriever(catalog, RetrievalConfig(direct_max=8)).retrieve("number 3").mode is RetrievalMode.bm25


def test_typo_tolerance(demo_retriever: Retriever) -> None:
    assert demo_retriever.retrieve("screenshto of the pricing page").candidates[0].id == "screenshot_page"


def test_tokenisation() -> None:
    assert tokenize("sendPushNotification") == tokenize("send_push_notification") == ["send", "push", "notificat"]
    assert tokenize("Exporting CSVs") == ["export", "csv"]
    assert tokenize("Teléfono MÓVIL") == ["telefono", "movil"]
    assert tokenize("reminders") == tokenize("reminder") == tokenize("remind")
    assert "短信" in tokenize("发送短信")
    assert tokenize("the, and; of!") == []


def test_non_ascii_messages_retrieve(demo_retriever: Retriever) -> None:
    # concept words cover common translations: Spanish and Chinese requests still find the tool
    assert demo_retriever.retrieve("envía un SMS a Jordan").candidates[0].id == "send_sms"
    assert "send_sms" in [c.id for c in demo_retriever.retrieve("给张三发短信").candidates]
