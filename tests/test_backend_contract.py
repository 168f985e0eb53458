"""The backend contract (issue 12 item 4), checked on every registered backend.

Each backend answers a Question with a valid Answer, declares its capabilities truthfully (one that
says it learns from examples answers differently after `add_exemplar`; one that does not refuses),
and its sync facade gives what `adecide` gives. The systemone backend talks to a real `jevcompat
mock` subprocess on loopback; the semantic one runs the real e5 model (skipped without the extra).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tui_router.calibrate import LocalParams, backend_probabilities
from tui_router.catalog import Catalog, parse_catalog
from tui_router.config import BackendName, config_from_dict
from tui_router.decide import BACKEND_NAMES, BACKENDS, REGISTRY, DecisionBackend, backend_class, make_backend
from tui_router.decide.base import Question, check_answer
from tui_router.embed import semantic_available
from tui_router.errors import ConfigError
from tui_router.evaluate import teach_local_backend
from tui_router.route import Router

TOOLS = [
    {"id": "reset_password", "when_to_use": "Reset a user's forgotten account password.", "keywords": ["password", "login"]},
    {"id": "send_invoice", "when_to_use": "Send an invoice to a customer for billing.", "keywords": ["invoice", "bill"]},
    {"id": "book_room", "when_to_use": "Book a meeting room for a time slot.", "keywords": ["meeting room", "book"]},
    {"id": "ask_user", "when_to_use": "Ask the user a clarifying question.", "risk": "escalation"},
]
CLEAR = "I forgot my password and cannot login"
# Shares no word with any tool: only a labelled turn can tie it to one.
UNSEEN = "zorblax the quarterly flimflam"
TAUGHT = "please zorblax the quarterly flimflam"


def tiny_catalog() -> Catalog:
    return parse_catalog({"name": "contract-tiny", "tools": TOOLS})


def question_for(catalog: Catalog, message: str) -> Question:
    options = {t.id: catalog.description_of(t.id) for t in catalog.tools}
    options[catalog.none_option] = catalog.description_of(catalog.none_option)
    return Question(message=message, options=options, none_option=catalog.none_option, retrieved_tools=list(options)[:-1])


PARAMS = [pytest.param(name, marks=pytest.mark.skipif(name == "semantic" and not semantic_available(), reason="needs the semantic extra"))
          for name in BACKEND_NAMES]


@pytest.fixture(scope="module")
def built(request: pytest.FixtureRequest, jev_mocks, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, DecisionBackend]]:
    """One backend per name, built lazily through the registry (as the router builds them)."""
    made: dict[str, DecisionBackend] = {}
    cache = tmp_path_factory.mktemp("contract-profiles")

    def get(name: str) -> DecisionBackend:
        if name not in made:
            config = config_from_dict({"backend": name, "systemone": {"base_url": jev_mocks.url(), "timeout": 10, "probe": False}})
            made[name] = make_backend(name, tiny_catalog(), config)
        return made[name]

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(cache))
        yield get  # type: ignore[misc]
    for backend in made.values():
        backend.close()


@pytest.mark.parametrize("name", PARAMS)
def test_answers_a_question_with_a_valid_answer(built, name: str) -> None:
    backend = built(name)
    assert type(backend) is backend_class(name) and backend.name == name
    catalog = tiny_catalog()
    question = question_for(catalog, CLEAR)
    answer = backend.decide(question)
    assert check_answer(answer, list(question.options)) == ""
    assert answer.model
    if name != "systemone":  # the mock answers by its own rules; the offline backends know this one
        assert answer.choice == "reset_password"


@pytest.mark.parametrize("name", PARAMS)
def test_sync_facade_equals_async(built, name: str) -> None:
    backend = built(name)
    question = question_for(tiny_catalog(), CLEAR)
    sync = backend.decide(question)
    asynchronous = asyncio.run(backend.adecide(question))
    assert (sync.choice, sync.probabilities, sync.error, sync.model) == (
        asynchronous.choice, asynchronous.probabilities, asynchronous.error, asynchronous.model
    )
    assert asyncio.run(backend.aoption_limit()) == backend.option_limit() >= len(question.options)


@pytest.mark.parametrize("name", PARAMS)
def test_learning_is_declared_truthfully(jev_mocks, name: str) -> None:
    if name == "semantic" and not semantic_available():
        pytest.skip("needs the semantic extra")
    # a fresh backend: teaching must not leak into the other tests' module-scoped ones
    config = config_from_dict({"backend": name, "systemone": {"base_url": jev_mocks.url(), "timeout": 10, "probe": False}})
    catalog = tiny_catalog()
    backend = make_backend(name, catalog, config)
    try:
        question = question_for(catalog, UNSEEN)
        before = backend.decide(question)
        assert check_answer(before, list(question.options)) == ""
        assert backend.suggest_candidates(UNSEEN) == []
        if not backend.learns_from_examples:
            with pytest.raises(NotImplementedError, match=f"the {name} backend does not learn"):
                backend.add_exemplar("book_room", TAUGHT)
            assert backend.decide(question).probabilities == before.probabilities
            return
        backend.add_exemplar("book_room", TAUGHT)
        after = backend.decide(question)
        assert check_answer(after, list(question.options)) == ""
        assert after.probabilities["book_room"] > before.probabilities["book_room"] + 0.05
        assert after.choice == "book_room" != before.choice
        if backend.supplies_candidates:
            assert "book_room" in backend.suggest_candidates(UNSEEN)
            assert backend.suggest_candidates(UNSEEN, holdout=UNSEEN) == ["book_room"]  # only the exact message is held out
    finally:
        backend.close()


@pytest.mark.parametrize("name", PARAMS)
def test_eval_teaches_only_backends_that_learn(built, name: str) -> None:
    from tui_router.evaluate import LabelledCase
    from tui_router.session import Turn

    backend = built(name)
    router = Router(tiny_catalog(), config_from_dict({"backend": name}), backend=backend)
    cases = [LabelledCase(source="contract.toml", index=0, turn=Turn(message=CLEAR, label="reset_password"))]
    assert teach_local_backend(router, cases) is backend.learns_from_examples


@pytest.mark.parametrize("name", PARAMS)
def test_own_retriever_and_calibration_params_are_honest(built, name: str) -> None:
    backend = built(name)
    catalog = tiny_catalog()
    router = Router(catalog, config_from_dict({"backend": name}), backend=backend)
    own = backend.make_retriever(catalog, router.config.retrieval)
    if own is None:
        assert type(router.retriever).__name__ == "Retriever"
    else:
        assert type(router.retriever) is type(own)
    retrieval = router.retrieve(CLEAR)
    assert "reset_password" in [c.id for c in retrieval.candidates]
    declared = backend.calibration_params()
    if declared is None:
        return
    # what calibrate fits must reproduce decide(): evidence + distribution at the declared parameters
    question = question_for(catalog, CLEAR)
    options = list(question.options)
    evidence = backend.evidence(question.message, options, None)  # type: ignore[attr-defined]
    none_index = options.index(catalog.none_option)
    values = [evidence.get(o, declared.none_margin if o == catalog.none_option else 0.0) for o in options]
    values[none_index] -= declared.none_margin
    mine = backend_probabilities(backend, options, values, none_index, LocalParams(temperature=declared.temperature, none_margin=declared.none_margin))
    real = backend.decide(question).probabilities
    assert mine == pytest.approx(real, abs=1e-9)


def test_one_list_of_backend_names() -> None:
    from typing import get_args

    assert BACKENDS == ("auto", *BACKEND_NAMES) and set(REGISTRY) == set(BACKEND_NAMES) == {"local", "bm25", "systemone", "semantic"}
    assert get_args(BackendName) == BACKENDS  # config validation reads the registry
    with pytest.raises(ConfigError, match=r"unknown backend 'lokal'.*did you mean 'local'"):
        backend_class("lokal")
    with pytest.raises(ConfigError, match="'backend' must be 'auto', 'local', 'bm25', 'systemone' or 'semantic'"):
        config_from_dict({"backend": "gpt"})


def test_cli_backend_choices_come_from_the_registry() -> None:
    done = subprocess.run([sys.executable, "-m", "tui_router", "route", "--backend", "nope", "hello"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"use one of {', '.join(BACKENDS)}" in done.stderr and "Traceback" not in done.stderr


MODULES = [
    "tui_router.confidence",
    "tui_router.decide",
    "tui_router.decide.base",
    "tui_router.decide.bm25",
    "tui_router.decide.local",
    "tui_router.decide.systemone",
    "tui_router.decide.systemone.wire",
    "tui_router.decide.systemone.client",
    "tui_router.decide.systemone.profile",
    "tui_router.decide.systemone.backend",
    "tui_router.config",
    "tui_router.policy",
    "tui_router.route",
] + (["tui_router.decide.semantic"] if semantic_available() else [])


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    """No import cycle: every module can be the first one a program imports."""
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_no_backend_is_probed_for_attributes() -> None:
    """Callers use the declared contract (decide/base.py), never getattr/hasattr on a backend."""
    root = Path(__file__).resolve().parent.parent / "tui_router"
    probing = re.compile(r"(getattr|hasattr)\(\s*[\w.]*backend")
    found = [
        f"{path.relative_to(root)}:{n}" for path in sorted(root.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if probing.search(line)
    ]
    assert found == []


def test_candidate_assembly_order() -> None:
    """retrieved top_k, then a backend's suggestions, then always_include, then escalation; no repeats."""
    from tui_router.config import RetrievalConfig
    from tui_router.retrieve import RetrievalMode, Retriever

    config = RetrievalConfig(direct_max=0, top_k=1, always_include=["send_invoice"], include_escalation=True)
    retriever = Retriever(tiny_catalog(), config)
    retrieval = retriever.retrieve(CLEAR, extra=["book_room", "no_such_tool", "reset_password"])
    assert [c.id for c in retrieval.candidates] == ["reset_password", "book_room", "send_invoice", "ask_user"]
    assert retrieval.mode is RetrievalMode.bm25 and retrieval.ranked == ["reset_password"]
    nothing = Retriever(tiny_catalog(), config.model_copy(update={"include_escalation": False})).retrieve(UNSEEN)
    assert nothing.mode is RetrievalMode.escalation  # nothing found: the escalation options regardless
    assert [c.id for c in nothing.candidates] == ["send_invoice", "ask_user"]
    suggested = Retriever(tiny_catalog(), config.model_copy(update={"include_escalation": False})).retrieve(UNSEEN, extra=["book_room"])
    assert suggested.mode is RetrievalMode.bm25 and [c.id for c in suggested.candidates] == ["book_room", "send_invoice"]


def test_a_backend_implements_one_way_of_answering() -> None:
    """Async first: a backend with only `adecide` gets the sync facade; one with neither is refused."""
    from tui_router.decide.base import Answer

    class AsyncOnly(DecisionBackend):
        name = "async-only"

        async def adecide(self, question: Question) -> Answer:
            await asyncio.sleep(0)
            probabilities = {o: (1.0 if o == question.none_option else 0.0) for o in question.options}
            return Answer(choice=question.none_option, probabilities=probabilities, model="scripted")

    question = question_for(tiny_catalog(), CLEAR)
    answer = AsyncOnly().decide(question)
    assert check_answer(answer, list(question.options)) == "" and answer.choice == "defer_to_llm"
    with pytest.raises(TypeError, match="Silent must implement adecide"):
        type("Silent", (DecisionBackend,), {})
