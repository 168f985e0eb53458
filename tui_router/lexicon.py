"""Concept groups: synonyms and common translations of the words tool requests are made of.

A lexical router misses "dig up the mail" for search_inbox because no word is shared. Every word
(or phrase) below maps to a concept token ("~search", "~email"), added beside the words themselves
on both sides: in the catalog's documents and in the message. Two texts that use different words
for the same thing then share a token. The groups (tui_router/vocab/lexicon.toml: English, with
common Spanish, French, German, Italian, Portuguese, Chinese and Japanese words) were written with
the demo catalog's tools and MetaTool's topics in view; each group's provenance says which.
"""

from __future__ import annotations

from functools import lru_cache

from . import vocab

# The groups (`lexicon.concepts`) and the "an LLM answers this itself" words (`lexicon.llm_native`:
# evidence for "none of the tools fits" unless the catalog itself uses them; a catalog with a joke
# tool makes "joke" a tool word again) live in tui_router/vocab/lexicon.toml with their provenance.


def _stem_phrase(text: str) -> tuple[str, ...]:
    from .textnorm import tokenize

    return tuple(tokenize(text, keep_stopwords=True))


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[tuple[str, ...], set[str]], list[tuple[str, str]], int]:
    """(stemmed word sequence -> concepts, [(CJK substring, concept)], longest phrase)."""
    from .textnorm import _NO_SPACE_SCRIPT, fold

    phrases: dict[tuple[str, ...], set[str]] = {}
    cjk: list[tuple[str, str]] = []
    longest = 1
    for name, words in vocab.groups("lexicon.concepts").items():
        concept = "~" + name
        for word in words:
            if _NO_SPACE_SCRIPT.search(word):
                cjk.append((fold(word), concept))
                continue
            key = _stem_phrase(word)
            if key:
                phrases.setdefault(key, set()).add(concept)
                longest = max(longest, len(key))
    return phrases, cjk, longest


@lru_cache(maxsize=1)
def _llm_native() -> tuple[frozenset[tuple[str, ...]], tuple[str, ...]]:
    from .textnorm import _NO_SPACE_SCRIPT, fold

    words: set[tuple[str, ...]] = set()
    cjk: list[str] = []
    for item in vocab.entries("lexicon.llm_native"):
        if _NO_SPACE_SCRIPT.search(item):
            cjk.append(fold(item))
        else:
            key = _stem_phrase(item)
            if key:
                words.add(key)
    return frozenset(words), tuple(cjk)


@lru_cache(maxsize=1)
def _phrase_starts() -> frozenset[str]:
    return frozenset(key[0] for key in _tables()[0])


def _ngrams(tokens: list[str], longest: int):
    for size in range(1, longest + 1):
        for start in range(len(tokens) - size + 1):
            yield tuple(tokens[start : start + size])


def concept_sources(text: str, tokens: list[str] | None = None) -> dict[str, set[str]]:
    """Concept token -> the words of `text` that triggered it ('~email' -> {'mail'}).

    `tokens` (stopwords kept) may be passed when the caller already corrected typos in them.
    """
    from .textnorm import fold

    phrases, cjk, longest = _tables()
    if tokens is None:
        tokens = list(_stem_phrase(text))
    found: dict[str, set[str]] = {}
    starts = _phrase_starts()
    for i, token in enumerate(tokens):
        if token not in starts:
            continue
        for size in range(1, min(longest, len(tokens) - i) + 1):
            gram = tuple(tokens[i : i + size])
            for concept in phrases.get(gram, ()):
                found.setdefault(concept, set()).update(gram)
    if cjk and not text.isascii():
        folded = fold(text)
        for needle, concept in cjk:
            if needle in folded:
                found.setdefault(concept, set())
    return found


def concepts(text: str, tokens: list[str] | None = None) -> list[str]:
    """Concept tokens ('~email', ...) for the words and phrases in `text`, each at most once."""
    return list(concept_sources(text, tokens))


def llm_native_cues(text: str, catalog_vocabulary: set[str] | frozenset[str]) -> int:
    """How many 'an LLM can answer this itself' cues the text has that the catalog does not use."""
    from .textnorm import fold

    words, cjk = _llm_native()
    tokens = list(_stem_phrase(text))
    count = 0
    seen: set[tuple[str, ...]] = set()
    for gram in _ngrams(tokens, 4):
        if gram in words and gram not in seen:
            seen.add(gram)
            if not all(part in catalog_vocabulary for part in gram):
                count += 1
    folded = fold(text)
    count += sum(1 for needle in cjk if needle in folded)
    return count


def analyze(text: str) -> list[str]:
    """Words plus concept tokens: what retrieval and the local model index and match."""
    return list(_analyze(text))


@lru_cache(maxsize=131072)
def _analyze(text: str) -> tuple[str, ...]:
    # Cached: the retriever and the local model analyse the same catalog fields.
    from .textnorm import tokens_with_stops

    pairs = tokens_with_stops(text)
    return tuple([t for t, stop in pairs if not stop] + concepts(text, [t for t, _ in pairs]))
