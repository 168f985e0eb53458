"""Tokenisation shared by retrieval and the lexical backends.

One function, `tokenize`, so that the catalog side and the message side can never drift apart:
case folding, accent folding, snake_case / camelCase splitting, a light suffix stemmer, a short
stopword list, and character bigrams for scripts written without spaces (CJK, Thai).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

from . import vocab

# Words that carry no routing signal in requests ("please can you ...") or in tool descriptions
# (tui_router/vocab/textnorm.toml, with the stemmer's suffix rules).
STOPWORDS = frozenset(vocab.entries("textnorm.stopwords"))
# What the lexical stages (BM25 and its typo lookup, the local evidence, cue words, action verbs)
# read of a message: its first 2,000 characters, as the embedding does ([semantic] max_chars). A
# request is a few hundred characters (the longest in the tuned-on sets is under 400); a document
# pasted after it adds only words that are not the request, and cost time in proportion (tokens,
# a typo lookup per unknown word, a BM25 pass per term: about 0.2 s at 50,000 characters). The
# safety checks (injection.py, authority.py) still read 20,000 (route.MAX_MESSAGE_CHARS).
ROUTED_CHARS = 2000

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Scripts without word separators: index character bigrams (and single characters). CJK, Hangul,
# Thai, and Lao, Myanmar and Khmer, which like Thai write a sentence without spaces (left out, a
# Khmer sentence was one "word" that matched nothing).
_NO_SPACE_SCRIPT = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff]"
)

_SUFFIXES = vocab.rules("textnorm.suffixes")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A deliberately light, deterministic suffix stripper (plural, -ing, -ed, -ation ...)."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    for suffix, repl in _SUFFIXES:
        if suffix == "s" and word.endswith(("ss", "us", "is")):
            continue
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)] + repl
            if suffix in {"ing", "ed", "er", "ers", "ings"} and len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # running -> run, shipped -> ship
            if suffix == "es" and not re.search(r"(ss|sh|ch|x|z)$", base):
                base = word[:-1]  # "files" -> "file", but "boxes" -> "box"
            return base[:-1] if base.endswith("e") and len(base) > 3 else base
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


# Invisible characters that may sit inside a word and are not a word break for matching: the soft
# hyphen, zero-width space / non-joiner / joiner (which Devanagari, Persian and emoji use inside a
# word), the left-to-right and right-to-left marks, the word joiner and invisible operators, and
# the BOM. Left in, `te\u200bxt` was the two words "te" and "xt" and matched nothing. Also the
# Arabic tatweel (U+0640), a stretch of the line between letters: رسـالة is رسالة.
_IGNORABLE = re.compile("[\u00ad\u0640\u200b-\u200f\u2060-\u2064\ufeff]")


def fold(text: str) -> str:
    """NFKC + case fold + strip combining accents (teléfono -> telefono) and in-word invisible
    characters (zero-width space, joiners, soft hyphen)."""
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFKC", _IGNORABLE.sub("", text)).casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


_ACRONYM_PLURAL = re.compile(r"\b([A-Z]{2,})s\b")


def split_identifier(text: str) -> str:
    """sendPushNotification / send_push_notification / send-sms -> space separated words."""
    if text.islower() or text.isupper():
        return text.replace("_", " ").replace("-", " ").replace(".", " ").replace(":", " ")
    text = _ACRONYM_PLURAL.sub(r"\1", text)  # CSVs -> CSV, URLs -> URL
    return _CAMEL.sub(" ", text).replace("_", " ").replace("-", " ").replace(".", " ").replace(":", " ")


@lru_cache(maxsize=1)
def _word_with_marks() -> re.Pattern[str]:
    """A word of letters and digits with the combining marks that belong to it. `\\w` leaves out
    the vowel signs of Devanagari and the other Brahmic scripts (categories Mn, Mc), so `[^\\W_]+`
    cut जॉर्डन into ज and रडन. Built once from unicodedata (about 20 ms), only for non-ASCII text."""
    marks: list[str] = []
    start = None
    for code in [*range(0x300, 0x20000), *range(0xE0100, 0xE01F0)]:
        is_mark = unicodedata.category(chr(code))[0] == "M"
        if is_mark and start is None:
            start = code
        elif not is_mark and start is not None:
            marks.append(f"{chr(start)}-{chr(code - 1)}" if code - 1 > start else chr(start))
            start = None
    return re.compile(f"[^\\W_](?:[^\\W_]|[{''.join(marks)}])*")  # a mark alone (U+FE0F after an emoji) is no word


def words(text: str) -> list[str]:
    """Folded words before stemming (what typo correction compares)."""
    folded = fold(split_identifier(text))
    return (_WORD if folded.isascii() else _word_with_marks()).findall(folded)


def tokens_with_stops(text: str, correct: Callable[[str], str | None] | None = None) -> list[tuple[str, bool]]:
    """(stemmed token, is a stopword) for every token; `correct` may fix a misspelt word first."""
    out: list[tuple[str, bool]] = []
    ascii_only = text.isascii()
    for word in words(text):
        if not ascii_only and _NO_SPACE_SCRIPT.search(word):
            out.extend((t, False) for t in _cjk_tokens(word))
            continue
        if word in STOPWORDS:
            out.append((word, True))
            continue
        if len(word) == 1 and word.isascii() and not word.isdigit():
            continue
        if correct is not None:
            word = correct(word) or word
        out.append((stem(word), False))
    return out


def tokenize(
    text: str, *, keep_stopwords: bool = False, correct: Callable[[str], str | None] | None = None
) -> list[str]:
    """Tokens for BM25 and overlap scoring. `correct` may replace a misspelt word before stemming."""
    return [t for t, stop in tokens_with_stops(text, correct) if keep_stopwords or not stop]


def _cjk_tokens(word: str) -> list[str]:
    """Split a mixed run into ASCII words and CJK characters + bigrams."""
    out: list[str] = []
    run: list[str] = []
    latin: list[str] = []

    def flush_run() -> None:
        if run:
            out.extend(run)
            out.extend(a + b for a, b in zip(run, run[1:], strict=False))
            run.clear()

    def flush_latin() -> None:
        if latin:
            w = "".join(latin)
            if w not in STOPWORDS and (len(w) > 1 or w.isdigit()):
                out.append(stem(w))
            latin.clear()

    for ch in word:
        if run and not latin and unicodedata.category(ch)[0] == "M":
            run[-1] += ch  # a Thai vowel sign stays with its consonant: one grapheme, one unit
        elif _NO_SPACE_SCRIPT.match(ch):
            flush_latin()
            run.append(ch)
        else:
            flush_run()
            latin.append(ch)
    flush_run()
    flush_latin()
    return out
