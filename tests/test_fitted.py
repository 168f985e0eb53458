"""The fitted head (tui_router/decide/fitted.py): the fit, refits from labels, exact leave-one-out."""

from __future__ import annotations

import numpy as np
import pytest

from tui_router.decide.fitted import FittedHead, HeadSettings, fitted_constants, head_settings

CLASSES = ["refund", "track", "none"]


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def clustered(rng: np.random.Generator, centre: np.ndarray, n: int, spread: float = 0.08) -> list[np.ndarray]:
    return [unit(centre + spread * rng.normal(size=centre.shape)) for _ in range(n)]


@pytest.fixture
def world() -> tuple[np.random.Generator, dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    return rng, {c: unit(rng.normal(size=16)) for c in CLASSES}


def trained(rng: np.random.Generator, centres: dict[str, np.ndarray], **settings: float) -> FittedHead:
    head = FittedHead(CLASSES, 16, HeadSettings(**settings))
    points = [(c, v, 1.0) for c in CLASSES for v in clustered(rng, centres[c], 4)]
    head.fit_prior(points)
    return head


def test_the_fit_on_a_tiny_catalog_finds_the_known_answer(world) -> None:
    rng, centres = world
    head = trained(rng, centres)
    for c in CLASSES:
        for probe in clustered(rng, centres[c], 5, spread=0.05):
            scores = head.scores(probe)
            assert head.classes[int(np.argmax(scores))] == c
    # a point far from every class scores low for all of them
    assert head.scores(unit(-sum(centres.values()))).max() < 0.9


def test_class_weights_are_balanced_and_none_weight_applies(world) -> None:
    rng, centres = world
    head = FittedHead(CLASSES, 16, HeadSettings())
    # ten texts for refund, one for track: the prior does not favour refund for a point in between
    points = [("refund", v, 1.0) for v in clustered(rng, centres["refund"], 10)]
    points += [("track", unit(centres["track"]), 1.0), ("none", unit(centres["none"]), 1.0)]
    head.fit_prior(points)
    middle = unit(centres["refund"] + centres["track"])
    s = head.scores(middle)
    assert abs(s[0] - s[1]) < 0.35
    heavy = FittedHead(CLASSES, 16, HeadSettings())
    heavy.fit_prior(points, {"none": 3.0})
    assert heavy.scores(unit(centres["none"]))[2] > head.scores(unit(centres["none"]))[2]


def test_a_new_label_changes_the_answer_and_leave_one_out_is_exact(world) -> None:
    rng, centres = world
    prior = [(c, v, 1.0) for c in CLASSES for v in clustered(rng, centres[c], 4)]
    head = FittedHead(CLASSES, 16, HeadSettings())
    head.fit_prior(prior)
    # a message near "track" that operators say is a refund request
    message = unit(centres["track"] + 0.15 * rng.normal(size=16))
    assert head.classes[int(np.argmax(head.scores(message)))] == "track"
    labels = [("refund", f"m{i}", unit(message + 0.05 * rng.normal(size=16))) for i in range(6)]
    labels.append(("track", "m0", unit(message + 0.05 * rng.normal(size=16))))  # a key taught twice
    for label, key, vector in labels[:6]:
        head.add_label(label, key, vector)
    assert head.labels == 6
    assert head.classes[int(np.argmax(head.scores(message)))] == "refund"
    head.add_label(*labels[6])
    # leave-one-out equals a head trained without that key's labels
    for key in ("m3", "m0"):
        again = FittedHead(CLASSES, 16, HeadSettings())
        again.fit_prior(prior)
        for label, k, vector in labels:
            if k != key:
                again.add_label(label, k, vector)
        assert np.allclose(head.scores(message, holdout=key), again.scores(message), atol=1e-8)
    # forgetting a key's labels of one class is exactly as if they were never taught
    head.remove_label("track", "m0")
    head.remove_label("refund", "m0")
    assert head.labels == 5
    fresh = FittedHead(CLASSES, 16, HeadSettings())
    fresh.fit_prior(prior)
    for label, key, vector in labels[1:6]:
        fresh.add_label(label, key, vector)
    assert np.allclose(head.scores(message), fresh.scores(message), atol=1e-8)
    # an unknown label or holdout key changes nothing
    before = head.scores(message)
    head.add_label("no_such_tool", "z", message)
    assert np.allclose(head.scores(message, holdout="never-taught"), before)


def test_at_2000_labels_a_new_label_is_an_exact_rank_one_update(world) -> None:
    """The refit stays exact at scale (its speed is measured by benchmarks/bench_refit.py, not here)."""
    rng, _ = world
    head = FittedHead(CLASSES, 384, HeadSettings())
    head.fit_prior([(c, unit(rng.normal(size=384)), 1.0) for c in CLASSES for _ in range(5)])
    for i in range(2000):
        head.add_label(CLASSES[i % 3], f"k{i}", unit(rng.normal(size=384)))
    probe = unit(rng.normal(size=384))
    before = head.scores(probe)
    head.add_label("refund", "new", unit(probe + 0.1 * rng.normal(size=384)))
    after = head.scores(probe)
    assert head.labels == 2001 and np.isfinite(after).all()
    assert after[0] > before[0]  # the new refund label raises refund for a message near it
    assert np.allclose(head.scores(probe, holdout="new"), before, atol=1e-8)


def test_the_constants_file_holds_every_weight() -> None:
    data = fitted_constants()
    from tui_router.decide.semantic import TOOL_FEATURES

    assert data["tool_features"] == list(TOOL_FEATURES)  # the fit script wrote every feature's weight
    assert len(data["tool_weights"]) == len(TOOL_FEATURES)
    assert "head_none" in data["none_weights"] and "bias" in data["none_weights"]
    settings = head_settings()
    assert settings.ridge > 0 and settings.label_weight > 0


def test_a_damaged_constants_file_is_one_sentence(tmp_path, monkeypatch) -> None:
    from tui_router.decide import fitted
    from tui_router.errors import ConfigError

    broken = tmp_path / "fitted-model.json"
    broken.write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(fitted, "CONSTANTS", broken)
    fitted.fitted_constants.cache_clear()
    try:
        with pytest.raises(ConfigError, match="cannot be read"):
            fitted.fitted_constants()
    finally:
        fitted.fitted_constants.cache_clear()
