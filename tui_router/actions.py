"""What a request asks to do to a thing: create it, remove it, change it, read it, send it, reply
to a message, or grant someone access to it.

Sibling tools (create/cancel/update/list of one object, add to/remove from a list, send/reply,
share/edit) share their topic, so an embedding model finds them all equally close; the verb tells
them apart. A tool's action comes from the first word of its id (verb_object, the common
convention); a message's from cue words in several languages. Two constructions are read apart:
"let Dana edit the deck" grants access (the edit is Dana's, not the request's), and a reply answers
a message the request refers to ("Karen mailed this morning; tell her yes"), so a new message to
an address is a send and a reply tool does not fit it. Used as two features of the semantic
backend: the tool's action is among the message's, or the message names actions and not the tool's.
"""

from __future__ import annotations

import re
from functools import lru_cache

from . import vocab
from .textnorm import fold

CREATE, REMOVE, UPDATE, READ, SEND = "create", "remove", "update", "read", "send"
REPLY, GRANT = "reply", "grant"

ACTIONS = (CREATE, REMOVE, UPDATE, READ, SEND, REPLY, GRANT)

# The word lists live in tui_router/vocab/actions.toml (each with its provenance): a tool id's first
# word -> action (`tool_verbs`), and message cues per action (`cues_<action>`), in several languages
# (folded: lower case, no accents). Words of 5+ letters also match longer forms ("cancel" ->
# "cancelled"); CJK and kana cues match anywhere; "*" stands for up to three words ("push * back":
# "push the standup back"); "^" marks a word that counts only as the request's first word.
_NO_SPACE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u0900-\u097f\u0600-\u06ff]")


@lru_cache(maxsize=1)
def _patterns() -> dict[str, re.Pattern[str]]:
    openers = "|".join(re.escape(w) for w in vocab.entries("actions.request_openers"))
    lead = rf"^(?:(?:{openers})\W+)*" if openers else "^"
    out = {}
    for action in ACTIONS:
        parts = []
        for cue in {fold(c) for c in vocab.entries(f"actions.cues_{action}")}:
            if _NO_SPACE.search(cue):
                parts.append(re.escape(cue))
            elif cue.startswith("^"):  # a noun as often as a verb: only as the request's first word
                parts.append(lead + re.escape(cue[1:]) + r"(?!\w)")
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


def _regex(name: str) -> re.Pattern[str] | None:
    patterns = vocab.entries(name)
    return re.compile("|".join(patterns)) if patterns else None


@lru_cache(maxsize=1)
def _negated_send() -> re.Pattern[str] | None:
    """"draft it but don't send it yet" asks for no sending."""
    return _regex("actions.negated_send")


@lru_cache(maxsize=1)
def _permitted() -> re.Pattern[str] | None:
    """"let Dana make changes to the deck": the verb is what someone else may do; the request grants it."""
    parts = vocab.groups("actions.permitted")
    if not all(parts.get(k) for k in ("verbs", "self", "acts")):
        return None
    verbs, selves, acts = ("|".join(parts[k]) for k in ("verbs", "self", "acts"))
    return re.compile(
        rf"(?<!\w)(?:{verbs})\s+(?!(?:{selves})(?!\w))(?:\S+\s+){{1,3}}?(?:to\s+|a\s+)?(?:{acts})(?!\w)"
    )


@lru_cache(maxsize=1)
def _received() -> re.Pattern[str] | None:
    """A message already received: sending "tell her it works" then answers it ("Karen mailed this
    morning", "I got an email from Karen", "Claire's email"), so a reply tool fits as well as a send one."""
    return _regex("actions.received")


def message_actions(message: str) -> frozenset[str]:
    text = fold(message[:2000]).strip()
    negated, permitted = _negated_send(), _permitted()
    if negated is not None:
        text = negated.sub(" ", text)
    if permitted is not None:
        text = permitted.sub(" grant ", text)
    patterns = _patterns()
    found: set[str] = set()
    # access wording first, then blanked: "view only" or "can edit" name the role, not a read or a change
    text, granted = patterns[GRANT].subn(" ", text)
    if granted:
        found.add(GRANT)
    found.update(action for action, pattern in patterns.items() if action != GRANT and pattern.search(text))
    received = _received()
    if SEND in found and received is not None and received.search(text):
        found.add(REPLY)
    if REPLY in found:
        found.add(SEND)  # a reply is sent
    return frozenset(found)


@lru_cache(maxsize=1)
def _access_nouns() -> frozenset[str]:
    return frozenset(vocab.entries("actions.access_nouns"))


def tool_action(tool_id: str) -> str | None:
    return _verbs().get(_id_words(tool_id)[0])


def tool_actions(tool_id: str) -> frozenset[str]:
    """The tool's action, and granting for request_access, add_role, update_permissions."""
    first, *rest = _id_words(tool_id)
    action = _verbs().get(first)
    if action is None:
        return frozenset()
    if action in (CREATE, UPDATE) and _access_nouns().intersection(rest):
        return frozenset({action, GRANT})
    return frozenset({action})


def _id_words(tool_id: str) -> list[str]:
    return re.split(r"[_.:\-]", tool_id.lower())


def agreement(actions: frozenset[str], tool_id: str) -> tuple[float, float]:
    """(1 if the tool's action is among the message's, 1 if the message names others only)."""
    accepted = tool_actions(tool_id)
    if not accepted or not actions:
        return 0.0, 0.0
    return (1.0, 0.0) if accepted & actions else (0.0, 1.0)
