"""The hand-entered vocabulary: word lists, regexes and prototype sentences, kept as data.

Each `<file>.toml` beside this module holds named lists (`actions.cues_send`, `lexicon.concepts`),
each with one line of provenance: a general linguistic resource, or the case and set it was added
for. Lists are read on first use and cached. TUI_ROUTER_VOCAB_OFF="actions.cues_reply,lexicon.concepts"
switches lists off (an empty list; `lexicon.concepts.email` drops one group), so a benchmark can
measure what each list is worth without editing code (benchmarks/ablate_vocab.py). The variable is
read once per process (`reset()` reads it again).
"""

from __future__ import annotations

import os
import re
import tomllib
from functools import cache, lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import ConfigError, did_you_mean

OFF_ENV = "TUI_ROUTER_VOCAB_OFF"
_FOLDER = Path(__file__).resolve().parent


class VocabList(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    provenance: str = Field(min_length=10)
    kind: Literal["words", "phrases", "regex", "sentences", "rules"]
    entries: tuple[str, ...] = ()
    groups: dict[str, tuple[str, ...]] = {}
    rules: tuple[tuple[str, str], ...] = ()
    sources: dict[str, str] = {}  # group -> the set it was written for, where it differs by group

    @model_validator(mode="after")
    def _check(self) -> VocabList:
        if sum(bool(x) for x in (self.entries, self.groups, self.rules)) != 1:
            raise ValueError("a list has exactly one of entries, groups or rules")
        if (self.kind == "rules") != bool(self.rules):
            raise ValueError("rules go with kind = 'rules', and only there")
        if self.kind == "regex":
            for pattern in self.entries:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(f"regex {pattern!r} does not compile: {exc}") from None
        unknown = set(self.sources) - set(self.groups)
        if unknown:
            raise ValueError(f"sources name groups the list does not have: {', '.join(sorted(unknown))}")
        return self

    def size(self) -> int:
        return len(self.entries) + sum(len(g) for g in self.groups.values()) + len(self.rules)


@cache
def _file(stem: str) -> dict[str, VocabList]:
    path = _FOLDER / f"{stem}.toml"
    with path.open("rb") as handle:
        raw = tomllib.load(handle)
    try:
        return {name: VocabList.model_validate(body) for name, body in raw.items()}
    except ValidationError as exc:  # a damaged install or a bad edit of a bundled file
        raise ConfigError(f"vocabulary file {path.name} is invalid: {exc.errors()[0]['msg']}") from None


def files() -> list[str]:
    return sorted(p.stem for p in _FOLDER.glob("*.toml"))


@lru_cache(maxsize=1)
def switched_off() -> frozenset[str]:
    """Names from TUI_ROUTER_VOCAB_OFF, each checked against the lists (a typo is an error, not a no-op)."""
    names = frozenset(n.strip() for n in os.environ.get(OFF_ENV, "").split(",") if n.strip())
    known = {f"{stem}.{name}": item for stem in files() for name, item in _file(stem).items()}
    for name in names:
        parent = name.rsplit(".", 1)[0]
        if name in known or (parent in known and name.rsplit(".", 1)[1] in known[parent].groups):
            continue
        raise ConfigError(f"{OFF_ENV} names an unknown vocabulary list '{name}'{did_you_mean(name, known)}")
    return names


def get(name: str, *, ignore_off: bool = False) -> VocabList:
    """The list `<file>.<list>`; empty when switched off (groups switched off one by one are dropped)."""
    stem, _, key = name.partition(".")
    item = _file(stem)[key]
    if ignore_off:
        return item
    off = switched_off()
    if name in off:
        return _empty(item)
    dropped = {g for g in item.groups if f"{name}.{g}" in off}
    if dropped:
        return item.model_copy(update={"groups": {g: w for g, w in item.groups.items() if g not in dropped}})
    return item


def _empty(item: VocabList) -> VocabList:
    return item.model_copy(update={"entries": (), "groups": {}, "rules": ()})


def entries(name: str) -> tuple[str, ...]:
    return get(name).entries


def groups(name: str) -> dict[str, tuple[str, ...]]:
    return get(name).groups


def rules(name: str) -> tuple[tuple[str, str], ...]:
    return get(name).rules


def all_lists(*, ignore_off: bool = False) -> dict[str, VocabList]:
    return {f"{stem}.{key}": get(f"{stem}.{key}", ignore_off=ignore_off) for stem in files() for key in _file(stem)}


def reset() -> None:
    """Read the files and TUI_ROUTER_VOCAB_OFF again (tests; modules that cached derived tables
    must be reloaded by the caller)."""
    _file.cache_clear()
    switched_off.cache_clear()
