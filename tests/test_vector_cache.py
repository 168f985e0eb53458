"""The disk cache of single texts' vectors (tui_router/vector_cache.py): shared by processes, bounded,
a damaged file replaced, an unwritable folder one sentence with the vectors kept in memory."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from disk_limits import limit_file_size, needs_fsize

from tui_router.embed import text_key
from tui_router.vector_cache import FILE_NAME, ROW_OVERHEAD, TextVectorCache

DIM = 8


def vectors(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def keys(prefix: str, n: int) -> list[bytes]:
    return [text_key("query", f"{prefix} {i}") for i in range(n)]


def test_vectors_come_back_bit_for_bit_in_another_instance(tmp_path: Path) -> None:
    cache = TextVectorCache(tmp_path, "model-a", DIM)
    rows = vectors(5, 0)
    cache.put(keys("m", 5), rows)
    again = TextVectorCache(tmp_path, "model-a", DIM)
    found = again.get(keys("m", 6))  # one never stored
    assert len(found) == 5 and all(np.array_equal(found[k], r) for k, r in zip(keys("m", 5), rows, strict=True))
    assert again.hits == 5 and again.problem == ""


def test_another_model_or_dimension_in_the_file_starts_it_afresh(tmp_path: Path) -> None:
    TextVectorCache(tmp_path, "model-a", DIM).put(keys("m", 3), vectors(3, 0))
    assert TextVectorCache(tmp_path, "model-b", DIM).get(keys("m", 3)) == {}
    assert TextVectorCache(tmp_path, "model-b", DIM + 1).count() == 0


WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from pathlib import Path
    from tui_router.embed import text_key
    from tui_router.vector_cache import TextVectorCache
    folder, prefix = Path(sys.argv[1]), sys.argv[2]
    cache = TextVectorCache(folder, "shared-model", 8)
    for i in range(150):  # one small transaction per text: the two writers interleave
        vector = np.full((1, 8), float(i), dtype=np.float32)
        cache.put([text_key("query", f"{prefix} {i}")], vector)
    print(cache.problem or "ok")
    """
)


def test_two_processes_write_the_same_file_and_lose_nothing(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), prefix], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for prefix in ("console", "eval")
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert [out.strip() for out, _ in outputs] == ["ok", "ok"]
    cache = TextVectorCache(tmp_path, "shared-model", 8)
    for prefix in ("console", "eval"):
        found = cache.get(keys(prefix, 150))
        assert len(found) == 150
        assert all(found[text_key("query", f"{prefix} {i}")][0] == float(i) for i in range(150))
    assert cache.count() == 300


def test_the_cache_is_bounded_and_drops_the_least_recently_used(tmp_path: Path) -> None:
    now = [1_000_000.0]
    row = 4 * DIM + ROW_OVERHEAD
    cache = TextVectorCache(tmp_path, "model-a", DIM, max_bytes=100 * row, clock=lambda: now[0])
    assert cache.max_rows == 100
    cache.put(keys("old", 60), vectors(60, 0))
    now[0] += 7200
    assert len(cache.get(keys("old", 10))) == 10  # read again: recently used
    now[0] += 7200
    cache.put(keys("new", 60), vectors(60, 1))  # 120 rows > 100: pruned to 90
    assert cache.count() == 90
    assert len(cache.get(keys("old", 10))) == 10  # the ten read again stay
    assert len(cache.get(keys("new", 60))) == 60
    assert len(cache.get(keys("old", 60))) == 30  # 30 of the 50 never read again were dropped


def test_a_damaged_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_bytes(b"this is not a database" * 100)
    cache = TextVectorCache(tmp_path, "model-a", DIM)
    assert cache.get(keys("m", 2)) == {}
    cache.put(keys("m", 2), vectors(2, 0))
    assert cache.problem == "" and len(TextVectorCache(tmp_path, "model-a", DIM).get(keys("m", 2))) == 2


def test_an_unwritable_folder_is_one_sentence_and_nothing_fails(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file\n", encoding="utf-8")
    cache = TextVectorCache(blocker / "model-a", "model-a", DIM)
    cache.put(keys("m", 2), vectors(2, 0))
    assert cache.get(keys("m", 2)) == {}
    assert cache.problem == f"cannot write the embedding cache in {blocker}/model-a (Not a directory); kept in memory"


FULL_DISK = """
import sys
import numpy as np
from pathlib import Path
from tui_router.embed import text_key
from tui_router.vector_cache import TextVectorCache
cache = TextVectorCache(Path(sys.argv[1]), "model-a", 8)
cache.put([text_key("query", "a message")], np.ones((1, 8), dtype=np.float32))
print(cache.problem)
"""


@needs_fsize
def test_a_file_it_could_not_finish_is_not_left_behind(tmp_path: Path) -> None:
    """Past the file-size limit the new database could not be written: it was left half-made (the
    CLI's disk-failure test found texts.sqlite in the cache); now it is removed and one sentence says why."""
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path / "m")], capture_output=True, text=True, timeout=60,
                          preexec_fn=limit_file_size(2000))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"cannot write the embedding cache in {tmp_path}/m (") and done.stdout.strip().endswith("; kept in memory")
    assert [p.name for p in (tmp_path / "m").iterdir()] == []
