"""Typo tolerance for retrieval: map an unknown word to a catalog word one edit away.

A symmetric-deletion index (the SymSpell idea): every vocabulary word is stored under itself and
its one-character deletions, so a lookup costs a handful of dict probes instead of comparing the
word with the whole vocabulary. Built lazily on the first unknown word.
"""

from __future__ import annotations

from collections.abc import Iterable


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def _within_one_edit(a: str, b: str) -> bool:
    """Levenshtein distance <= 1, or one adjacent transposition."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
    if la > lb:
        a, b = b, a
    return any(b[:i] + b[i + 1 :] == a for i in range(len(b)))


class TypoIndex:
    MIN_LENGTH = 5  # short words are too ambiguous to correct ("sent" vs "send")

    def __init__(self, vocabulary: Iterable[str]) -> None:
        self._vocabulary = vocabulary
        self._index: dict[str, list[str]] | None = None
        self._longest = 0

    def _build(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for word in self._vocabulary:
            if len(word) < self.MIN_LENGTH - 1 or not word.isascii() or not word.isalpha():
                continue
            index.setdefault(word, []).append(word)
            self._longest = max(self._longest, len(word))
            for variant in _deletes(word):
                index.setdefault(variant, []).append(word)
        return index

    def correct(self, word: str) -> str | None:
        if len(word) < self.MIN_LENGTH or not word.isascii() or not word.isalpha():
            return None
        if self._index is None:
            self._index = self._build()
        if len(word) > self._longest + 1:
            # one edit from no vocabulary word; and the deletions of a 50,000-letter word are 50,000
            # strings of 50,000 characters (seconds and gigabytes for one message)
            return None
        found: set[str] = set()
        for key in (word, *_deletes(word)):
            found.update(self._index.get(key, ()))
        matches = sorted(w for w in found if _within_one_edit(word, w))
        return matches[0] if len(matches) == 1 else (min(matches, key=len) if matches else None)
