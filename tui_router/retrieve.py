"""Layer 1: narrow the catalog to a few candidates with BM25 (rank-bm25).

Each tool's document is its id words, when_to_use, keywords and examples. A catalog of at most
`direct_max` tools skips retrieval (every tool is offered). When nothing matches, the escalation
options are the candidates. Retrieval recall caps everything after it, so it is measured alone.
"""

from __future__ import annotations

from collections import defaultdict
from enum import StrEnum

import numpy as np
from pydantic import BaseModel
from rank_bm25 import BM25Okapi

from .catalog import Catalog, Risk, Tool
from .config import RetrievalConfig
from .lexicon import analyze, concepts
from .textnorm import STOPWORDS, stem, tokenize, words
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
        """Stemmed message tokens (stopwords kept), misspelt words replaced by a catalog word."""
        return tokenize(message, keep_stopwords=True, correct=self._correct)

    def query_terms(self, message: str) -> list[str]:
        """Message words plus concept tokens: what BM25 is asked."""
        tokens = self.message_tokens(message)
        return [t for t in tokens if t not in STOPWORDS] + concepts(message, tokens)

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
        ranked = [self.tools[i].id for i in ranked_idx]
        score_of = {self.tools[i].id: scored[i] for i in ranked_idx}
        cfg = self.config

        def candidate(tool: Tool) -> Candidate:
            return Candidate(id=tool.id, score=round(score_of.get(tool.id, 0.0), 4), risk=tool.risk)

        if len(self.tools) <= cfg.direct_max:
            ordered = sorted(self.tools, key=lambda t: -score_of.get(t.id, 0.0))
            return Retrieval(candidates=[candidate(t) for t in ordered], mode=RetrievalMode.direct, ranked=ranked)

        chosen: list[Tool] = []
        seen: set[str] = set()

        def add(tool: Tool | None) -> None:
            if tool is not None and tool.id not in seen:
                seen.add(tool.id)
                chosen.append(tool)

        for i in ranked_idx:
            tool = self.tools[i]
            if len([t for t in chosen if not t.is_escalation]) >= cfg.top_k:
                break
            add(tool)
        for option_id in extra:
            add(self.catalog.get(option_id))
        mode = RetrievalMode.bm25 if chosen else RetrievalMode.escalation
        for option_id in cfg.always_include:
            add(self.catalog.get(option_id))
        if cfg.include_escalation or mode is RetrievalMode.escalation:
            for tool in self.tools:
                if tool.is_escalation:
                    add(tool)
        return Retrieval(candidates=[candidate(t) for t in chosen], mode=mode, ranked=ranked)
