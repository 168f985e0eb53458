"""Layer 1: narrow the catalog to a few candidates with BM25 (rank-bm25).

Each tool's document is its id words, when_to_use, keywords and examples. A catalog of at most
`direct_max` tools skips retrieval (every tool is offered). When nothing matches, the escalation
options are the candidates. Retrieval recall caps everything after it, so it is measured alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from enum import StrEnum

import numpy as np
from pydantic import BaseModel
from rank_bm25 import BM25Okapi

from .catalog import Catalog, Risk, Tool
from .config import RetrievalConfig
from .lexicon import analyze, concepts
from .textnorm import ROUTED_CHARS, STOPWORDS, stem, tokenize, words
from .typos import TypoIndex


class RetrievalMode(StrEnum):
    bm25 = "bm25"
    direct = "direct"
    escalation = "escalation"
    hybrid = "hybrid"  # BM25 fused with embedding similarity (tui_router/hybrid.py)


class Candidate(BaseModel):
    id: str
    score: float
    risk: Risk = Risk.read


class Retrieval(BaseModel):
    candidates: list[Candidate]
    mode: RetrievalMode
    ranked: list[str] = []  # every tool with a positive score, best first (for recall@k)


def tool_document(tool: Tool) -> list[str]:
    """The tokens BM25 indexes for one tool (id words count twice: they are the tool's name)."""
    id_words = analyze(tool.id)
    parts = [*id_words, *id_words, *analyze(tool.when_to_use)]
    for keyword in tool.keywords:
        parts.extend(analyze(keyword))
    for example in tool.examples:
        parts.extend(analyze(example))
    if tool.title:
        parts.extend(analyze(tool.title))
    return parts or ["_empty_"]


def _raw_vocabulary(catalog: Catalog) -> set[str]:
    vocabulary: set[str] = set()
    for tool in catalog.tools:
        for text in (tool.id, tool.when_to_use, tool.title or "", *tool.keywords, *tool.examples):
            vocabulary.update(words(text))
    return vocabulary


class Retriever:
    """BM25 over the catalog, with a postings list so a query touches only the tools it matches."""

    def __init__(self, catalog: Catalog, config: RetrievalConfig | None = None) -> None:
        self.catalog = catalog
        self.config = config or RetrievalConfig()
        self.tools = list(catalog.tools)
        corpus = [tool_document(t) for t in self.tools]
        self.bm25 = BM25Okapi(corpus)
        postings: dict[str, list[int]] = defaultdict(list)
        for index, doc in enumerate(self.bm25.doc_freqs):
            for term in doc:
                postings[term].append(index)
        self.postings = dict(postings)
        self.typos = TypoIndex(_raw_vocabulary(catalog))
        self._doc_len = np.asarray(self.bm25.doc_len, dtype=float)

    def _correct(self, word: str) -> str | None:
        if word in STOPWORDS or stem(word) in self.postings:
            return None
        return self.typos.correct(word)

    def message_tokens(self, message: str) -> list[str]:
        """Stemmed message tokens (stopwords kept), misspelt words replaced by a catalog word; of
        the message's first ROUTED_CHARS characters (textnorm says why)."""
        return tokenize(message[:ROUTED_CHARS], keep_stopwords=True, correct=self._correct)

    def query_terms(self, message: str) -> list[str]:
        """Message words plus concept tokens: what BM25 is asked."""
        tokens = self.message_tokens(message)
        return [t for t in tokens if t not in STOPWORDS] + concepts(message[:ROUTED_CHARS], tokens)

    def scores(self, message: str) -> dict[int, float]:
        """BM25 score of every tool sharing at least one term with the message."""
        terms = self.query_terms(message)
        hits: set[int] = set()
        for term in set(terms):
            hits.update(self.postings.get(term, ()))
        if not hits:
            return {}
        ids = sorted(hits)
        values = self.bm25.get_batch_scores(terms, ids)
        return {i: s for i, s in zip(ids, values, strict=True) if s > 0}

    def retrieve(self, message: str, extra: list[str] | tuple[str, ...] = ()) -> Retrieval:
        """Top-k BM25 candidates, then `extra` ids (a backend's suggestions), always_include and
        the escalation options."""
        scored = self.scores(message)
        ranked_idx = sorted(scored, key=lambda i: (-scored[i], i))
        everyone = None
        if len(self.tools) <= self.config.direct_max:  # offered whole: the unmatched after, in catalog order
            everyone = ranked_idx + [i for i in range(len(self.tools)) if i not in scored]
        return assemble_candidates(
            self.tools, ranked_idx, lambda i: scored.get(i, 0.0), self.config, extra, RetrievalMode.bm25, everyone=everyone
        )


def assemble_candidates(
    tools: Sequence[Tool],
    order: Sequence[int],
    score: Callable[[int], float],
    config: RetrievalConfig,
    extra: Sequence[str],
    mode: RetrievalMode,
    *,
    everyone: Sequence[int] | None = None,
    ranked_max: int | None = None,
) -> Retrieval:
    """The one place candidates are assembled, for every retriever.

    `order` is the retriever's ranking (tool indices, best first; only tools it found). A catalog of
    at most `direct_max` tools is offered whole, in `everyone` order. Otherwise: the first `top_k`
    ranked tools (escalation options do not count toward k), then `extra` (a backend's suggestions),
    `always_include` and, when configured or when nothing was found (mode escalation), the
    escalation options.
    """
    ranked = [tools[i].id for i in order[:ranked_max]]

    def candidate(i: int) -> Candidate:
        return Candidate(id=tools[i].id, score=round(float(score(i)), 4), risk=tools[i].risk)

    if len(tools) <= config.direct_max:
        return Retrieval(candidates=[candidate(i) for i in (order if everyone is None else everyone)], mode=RetrievalMode.direct, ranked=ranked)

    position = {t.id: i for i, t in enumerate(tools)}
    chosen: list[int] = []
    seen: set[int] = set()

    def add(i: int | None) -> None:
        if i is not None and i not in seen:
            seen.add(i)
            chosen.append(i)

    counted = 0
    for i in order:
        if counted >= config.top_k:
            break
        if not tools[i].is_escalation:
            counted += 1
        add(int(i))
    for option_id in extra:
        add(position.get(option_id))
    if not chosen:
        mode = RetrievalMode.escalation
    for option_id in config.always_include:
        add(position.get(option_id))
    if config.include_escalation or mode is RetrievalMode.escalation:
        for i, tool in enumerate(tools):
            if tool.is_escalation:
                add(i)
    return Retrieval(candidates=[candidate(i) for i in chosen], mode=mode, ranked=ranked)
