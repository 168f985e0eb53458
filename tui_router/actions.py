"""What a request asks to do to a thing: create it, remove it, change it, or send it.

Sibling tools (create/cancel/update of one object, add to/remove from a list, send/draft) share
their topic, so an embedding model finds them all equally close; the verb tells them apart. A
tool's action comes from the first word of its id (verb_object, the common convention; read verbs
too, so a read tool conflicts with a request to change something); a message's from cue words in
several languages. Used as two features of the semantic backend: the tool's action is among the
message's, or the message names actions and not the tool's.

Read cues, reply and grant actions (a reply answers a received message; "let Dana edit the deck"
grants access), polite openers and negated sends were removed after the ablation in
docs/vocab-ablation.md: they changed nothing beyond noise on the sets they were not written from.
"""

from __future__ import annotations

import re
from functools import lru_cache

from . import vocab
from .textnorm import ROUTED_CHARS, fold

CREATE, REMOVE, UPDATE, READ, SEND = "create", "remove", "update", "read", "send"

# actions with message cues (a read tool has no cue: a request that names another action conflicts)
ACTIONS = (CREATE, REMOVE, UPDATE, SEND)

# The word lists live in tui_router/vocab/actions.toml (each with its provenance): a tool id's first
# word -> action (`tool_verbs`), and message cues per action (`cues_<action>`), in several languages
# (folded: lower case, no accents). Words of 5+ letters also match longer forms ("cancel" ->
# "cancelled"); CJK and kana cues match anywhere; "*" stands for up to three words ("push * back":
# "push the standup back"); "^" marks a word that counts only as the request's first word.
_NO_SPACE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u0900-\u097f\u0600-\u06ff]")


@lru_cache(maxsize=1)
def _patterns() -> dict[str, re.Pattern[str]]:
    out = {}
    for action in ACTIONS:
        parts = []
        for cue in {fold(c) for c in vocab.entries(f"actions.cues_{action}")}:
            if _NO_SPACE.search(cue):
                parts.append(re.escape(cue))
            elif cue.startswith("^"):  # a noun as often as a verb: only as the request's first word
                parts.append("^" + re.escape(cue[1:]) + r"(?!\w)")
            elif " * " in cue:  # a separable verb: "push * back"
                head, tail = cue.split(" * ", 1)
                parts.append(r"(?<!\w)" + re.escape(head) + r"(?:\s+\S+){0,3}?\s+" + re.escape(tail) + r"(?!\w)")
            else:
                tail = r"\w*" if len(cue) >= 5 else ""
                parts.append(r"(?<!\w)" + re.escape(cue) + tail + r"(?!\w)")
        # an action without cues (its list switched off) matches nothing
        out[action] = re.compile("|".join(sorted(parts, key=len, reverse=True)) if parts else r"(?!)")
    return out


@lru_cache(maxsize=1)
def _verbs() -> dict[str, str]:
    return {verb: action for action, words in vocab.groups("actions.tool_verbs").items() for verb in words}


def message_actions(message: str) -> frozenset[str]:
    text = fold(message[:ROUTED_CHARS]).strip()
    return frozenset(action for action, pattern in _patterns().items() if pattern.search(text))


def tool_action(tool_id: str) -> str | None:
    return _verbs().get(_id_words(tool_id)[0])


def tool_actions(tool_id: str) -> frozenset[str]:
    action = tool_action(tool_id)
    return frozenset({action}) if action else frozenset()


def _id_words(tool_id: str) -> list[str]:
    return re.split(r"[_.:\-]", tool_id.lower())


def agreement(actions: frozenset[str], tool_id: str) -> tuple[float, float]:
    """(1 if the tool's action is among the message's, 1 if the message names others only)."""
    accepted = tool_actions(tool_id)
    if not accepted or not actions:
        return 0.0, 0.0
    return (1.0, 0.0) if accepted & actions else (0.0, 1.0)
