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


BALANCED = {"label_power": 0.0, "none_label_power": 0.5, "shrink": 1.0}


@pytest.mark.parametrize("settings", [{}, BALANCED], ids=["every-label-its-weight", "balanced-shrunk"])
def test_a_new_label_changes_the_answer_and_leave_one_out_is_exact(world, settings: dict[str, float]) -> None:
    rng, centres = world
    prior = [(c, v, 1.0) for c in CLASSES for v in clustered(rng, centres[c], 4)]

    def make() -> FittedHead:
        return FittedHead(CLASSES, 16, HeadSettings(**settings), none="none")

    head = make()
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
        again = make()
        again.fit_prior(prior)
        for label, k, vector in labels:
            if k != key:
                again.add_label(label, k, vector)
        assert np.allclose(head.scores(message, holdout=key), again.scores(message), atol=1e-8)
    # forgetting a key's labels of one class is exactly as if they were never taught
    head.remove_label("track", "m0")
    head.remove_label("refund", "m0")
    assert head.labels == 5
    fresh = make()
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


def synthetic_accuracy(settings: HeadSettings, seed: int, ks: tuple[int, ...]) -> list[float]:
    """Tool top-1 of the head alone on a synthetic catalog whose texts describe each tool only
    roughly, as k labelled turns per tool come (the none option and every other tool labelled
    more often, as operators label what they see most)."""
    rng = np.random.default_rng(seed)
    dim, tools = 32, 8
    classes = [f"t{i}" for i in range(tools)] + ["none"]
    centres = rng.normal(size=(tools + 1, dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)

    def near(c: int, spread: float) -> np.ndarray:
        return unit(centres[c] + spread * rng.normal(size=dim))

    prior = [(classes[c], near(c, 0.48), 1.0) for c in range(tools + 1) for _ in range(2)]
    probes = [(c, near(c, 0.32)) for c in range(tools) for _ in range(30)]
    pool = {c: [near(c, 0.32) for _ in range(80)] for c in range(tools + 1)}
    out = []
    for k in ks:
        head = FittedHead(classes, dim, settings, none="none")
        head.fit_prior(prior)
        for c in range(tools + 1):
            n = 4 * k if c == tools else (k if c % 2 == 0 else min(k, 1))
            for j in range(n):
                head.add_label(classes[c], f"{c}-{j}", pool[c][j])
        out.append(float(np.mean([np.argmax(head.scores(v)[:tools]) == c for c, v in probes])))
    return out


def test_labels_never_hurt_on_a_small_synthetic_set() -> None:
    """Uneven labels (the none option and half the tools labelled far more often) used to swamp the
    least-squares fit: with every label at its own weight, top-1 falls as labels come. Balanced and
    shrunk toward each class's prior, it does not."""
    ks = (0, 1, 2, 4, 8, 16)
    seeds = (1, 2, 3, 4)
    balanced = np.mean([synthetic_accuracy(HeadSettings(**BALANCED), s, ks) for s in seeds], axis=0)
    unbalanced = np.mean([synthetic_accuracy(HeadSettings(), s, ks) for s in seeds], axis=0)
    for i in range(1, len(ks)):
        assert balanced[i] >= balanced[:i].max() - 0.02, (ks[i], balanced.round(3).tolist())
    assert balanced[-1] >= balanced[0] + 0.15
    # the failure this guards against, on the same data
    assert unbalanced[-1] < unbalanced.max() - 0.03
    assert balanced[-1] > unbalanced[-1] + 0.1


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


def test_balanced_shrunk_weights_are_the_weighted_ridge_fit(world) -> None:
    """With shrink, a labelled tool's catalog texts and its labels share one unit (labels L / (1 + L),
    L = label_weight * n ** label_power); the none option's labels add to its bank. The head equals
    a weighted ridge regression solved directly with those weights."""
    rng, centres = world
    settings = HeadSettings(label_power=0.5, none_label_power=0.5, shrink=1.0, label_weight=2.0)
    head = FittedHead(CLASSES, 16, settings, none="none")
    prior = [(c, v, 1.0) for c in CLASSES for v in clustered(rng, centres[c], 3)]
    head.fit_prior(prior)
    labels = [("refund", f"r{i}", v) for i, v in enumerate(clustered(rng, centres["track"], 4))]
    labels += [("none", f"n{i}", v) for i, v in enumerate(clustered(rng, centres["none"], 9))]
    for label, key, vector in labels:
        head.add_label(label, key, vector)
    mean = np.mean([v for _, v, _ in prior], axis=0)
    refund_mass, none_mass = 2.0 * 4**0.5, 2.0 * 9**0.5
    rows, targets, weights = [], [], []
    for c, v, _ in prior:
        rows.append(v)
        targets.append(CLASSES.index(c))
        weights.append((1 / (1 + refund_mass) if c == "refund" else 1.0) / 3)
    for label, _, v in labels:
        rows.append(v)
        targets.append(CLASSES.index(label))
        weights.append(refund_mass / (1 + refund_mass) / 4 if label == "refund" else none_mass / 9)
    X = np.hstack([np.asarray(rows) - mean, np.ones((len(rows), 1))])
    Y = np.eye(len(CLASSES))[targets]
    W = np.asarray(weights)[:, None]
    expected = np.linalg.solve((X * W).T @ X + settings.ridge * np.eye(17), (X * W).T @ Y)
    probe = unit(centres["track"] + centres["refund"])
    assert np.allclose(head.scores(probe), np.append(probe - mean, 1.0) @ expected, atol=1e-8)
    # one unit for refund whatever its labels: its catalog texts keep 1 / (1 + L) of it
    assert head.class_terms(0, 4) == pytest.approx((1 / (1 + refund_mass), refund_mass / (1 + refund_mass) / 4))
    assert head.class_terms(2, 9) == pytest.approx((1.0, none_mass / 9))
