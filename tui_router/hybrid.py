"""Hybrid retrieval: BM25 fused with embedding similarity, for the semantic backend.

Retrieval recall caps everything after it, and BM25 alone misses a request that shares no word
with the right tool ("jen's 6-digit login codes stopped working" for reset_password, or any
request in another language). Every tool gets a fused score,

    w_cos * cosine(message, tool passage) + w_example * best cosine(message, tool example)
    + w_bm25 * BM25 / best BM25 of the message + w_logbm25 * log(1 + BM25)

(cosines shifted and scaled: (cos - 0.8) * 20; examples count only above 0.8), a linear score
fusion whose weights were fitted on MetaTool dev (benchmarks/fit_semantic.py; reciprocal rank
fusion was measured too, see docs/semantic-method.md). The top_k by fused score become the
candidates, then the same rules as BM25 retrieval: the backend's suggestions, always_include,
the escalation options, and direct mode for small catalogs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .catalog import Catalog, Tool
from .embed import PASSAGE, QUERY, Embedder, EmbeddingStore
from .retrieve import Retrieval, RetrievalMode, Retriever, assemble_candidates

# Bump when the option texts below change: cached vectors of the old texts are then not reused.
TEXT_RECIPE = "r1"
COS_CENTER = 0.8  # a typical cosine between unrelated texts under e5; features are centred on it
COS_SCALE = 20.0
RANKED_MAX = 100  # tools kept in Retrieval.ranked (for recall@k)


def tool_passage(tool: Tool) -> str:
    """The document e5 embeds for a tool: its name, when_to_use and keywords."""
    name = tool.title or tool.id.replace("_", " ").replace("-", " ")
    text = f"{name}: {tool.when_to_use}"
    if tool.keywords:
        text += f" ({', '.join(tool.keywords)})"
    return text


def keyword_phrases(tool: Tool) -> list[str]:
    """Keywords of two words or more ("let someone edit", "make changes"): short paraphrases of a
    request, embedded on their own; single words say too little to an embedding model."""
    return [k for k in tool.keywords if len(k.split()) >= 2]


def cos_feature(cos: np.ndarray | float) -> np.ndarray:
    return (np.asarray(cos, dtype=np.float64) - COS_CENTER) * COS_SCALE


def example_feature(cos: np.ndarray | float) -> np.ndarray:
    """A near-paraphrase of an example is strong evidence; an unrelated one says nothing."""
    return np.maximum(0.0, np.asarray(cos, dtype=np.float64) - COS_CENTER) * COS_SCALE


@dataclass(frozen=True)
class RetrievalWeights:
    cos: float
    example: float
    bm25: float
    log_bm25: float


class OptionIndex:
    """Embeddings of every tool's passage, examples and keyword phrases (the last two query-side,
    since examples are requests and phrases are pieces of requests)."""

    def __init__(self, catalog: Catalog, embedder: Embedder, store: EmbeddingStore) -> None:
        self.tools = list(catalog.tools)
        self.store = store
        version = f"{catalog.content_hash()}-{TEXT_RECIPE}"
        self.passages = store.load_or_embed(
            f"catalog-{catalog.name}-passages",
            version,
            PASSAGE,
            [tool_passage(t) for t in self.tools],
            embedder.embed,
            embedder.dim,
        )

        def owned(family: str, texts_of: Callable[[Tool], Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
            pairs = [(index, text) for index, tool in enumerate(self.tools) for text in texts_of(tool)]
            vectors = store.load_or_embed(
                f"catalog-{catalog.name}-{family}", version, QUERY, [t for _, t in pairs], embedder.embed, embedder.dim
            )
            return vectors, np.asarray([i for i, _ in pairs], dtype=np.int64)

        self.examples, self.example_owner = owned("examples", lambda tool: tool.examples)
        self.phrases, self.phrase_owner = owned("phrases", keyword_phrases)

    @property
    def problem(self) -> str:
        """Why its cache could not be written ("" when fine)."""
        return self.store.problem

    def _best(self, vectors: np.ndarray, owner: np.ndarray, vector: np.ndarray) -> np.ndarray:
        best = np.full(len(self.tools), -1.0)
        if len(owner):
            np.maximum.at(best, owner, vectors @ vector)
        return best

    def best_example(self, vector: np.ndarray) -> np.ndarray:
        """Per tool, the best cosine with one of its examples (-1 for a tool without examples)."""
        return self._best(self.examples, self.example_owner, vector)

    def best_phrase(self, vector: np.ndarray) -> np.ndarray:
        """Per tool, the best cosine with one of its keyword phrases (-1 for a tool without any)."""
        return self._best(self.phrases, self.phrase_owner, vector)


@dataclass
class QuerySignals:
    """What retrieval learned about one message, reused by the decision."""

    vector: np.ndarray
    cos: np.ndarray  # per tool: cosine with the tool passage
    example: np.ndarray  # per tool: best cosine with a catalog example (-1: none)
    bm25: np.ndarray  # per tool: BM25 score (0: no shared word)
    phrase: np.ndarray  # per tool: best cosine with a keyword phrase (-1: none)
    fused: np.ndarray  # per tool: the retrieval score


class HybridRetriever:
    """Same interface as `Retriever` (retrieve, scores, query_terms, message_tokens)."""

    def __init__(self, base: Retriever, index: OptionIndex, embedder: Embedder, weights: RetrievalWeights) -> None:
        self.base = base
        self.catalog = base.catalog
        self.config = base.config
        self.tools = base.tools
        self.index = index
        self.embedder = embedder
        self.weights = weights
        self._recent: OrderedDict[str, QuerySignals] = OrderedDict()
        self._lock = threading.Lock()

    # BM25 views, for anything that asks a retriever for them (the local evidence, the bm25 backend)
    def scores(self, message: str) -> dict[int, float]:
        return self.base.scores(message)

    def query_terms(self, message: str) -> list[str]:
        return self.base.query_terms(message)

    def message_tokens(self, message: str) -> list[str]:
        return self.base.message_tokens(message)

    def signals(self, message: str) -> QuerySignals:
        with self._lock:
            cached = self._recent.get(message)
        if cached is not None:
            return cached
        vector = self.embedder.query(message)
        cos = self.index.passages @ vector
        example = self.index.best_example(vector)
        bm25 = np.zeros(len(self.tools))
        for i, score in self.base.scores(message).items():
            bm25[i] = score
        w = self.weights
        top = bm25.max() if len(bm25) else 0.0
        fused = (
            w.cos * cos_feature(cos)
            + w.example * example_feature(example)
            + w.bm25 * (bm25 / top if top > 0 else bm25)
            + w.log_bm25 * np.log1p(bm25)
        )
        phrase = self.index.best_phrase(vector)
        signals = QuerySignals(vector=vector, cos=cos, example=example, bm25=bm25, phrase=phrase, fused=fused)
        with self._lock:  # the console routes in a worker thread; keep the small cache consistent
            self._recent[message] = signals
            while len(self._recent) > 8:
                self._recent.popitem(last=False)
        return signals

    def retrieve(self, message: str, extra: list[str] | tuple[str, ...] = ()) -> Retrieval:
        fused = self.signals(message).fused
        order = [int(i) for i in np.argsort(-fused, kind="stable")]
        return assemble_candidates(self.tools, order, lambda i: fused[i], self.config, extra, RetrievalMode.hybrid, ranked_max=RANKED_MAX)
