"""The allowlisted catalog: Tool and Catalog models, loading and validation.

Validation collects every problem and reports one line each (file, tool index and id, field), so a
person fixing a catalog sees the whole list at once instead of one traceback at a time.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from . import tomlio
from .errors import CatalogError, did_you_mean
from .resources import bundled_catalogs

ID_PATTERN = re.compile(r"^[a-z][a-z0-9_.:-]{0,63}$")
DEFAULT_NONE_OPTION = "defer_to_llm"
NONE_DESCRIPTION = "None of the allowlisted tools fits; continue with the main application LLM"


class Risk(StrEnum):
    read = "read"
    write = "write"
    outbound = "outbound"
    payment = "payment"
    permission = "permission"
    escalation = "escalation"


ToolId = Annotated[str, StringConstraints(pattern=ID_PATTERN.pattern)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Word = Annotated[str, StringConstraints(strip_whitespace=True)]


class Tool(BaseModel):
    # Constraints are declared (checked in pydantic-core, not Python) so 10,000 tools load fast.
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    id: ToolId
    when_to_use: Text
    title: str | None = None
    category: str | None = None
    risk: Risk = Risk.read
    keywords: tuple[Word, ...] = ()
    examples: tuple[Word, ...] = ()
    input_schema: dict[str, Any] | None = Field(default=None, alias="schema")

    @property
    def is_escalation(self) -> bool:
        return self.risk is Risk.escalation


TOOL_KEYS = {"id", "when_to_use", "title", "category", "risk", "keywords", "examples", "schema"}
CATALOG_KEYS = {"name", "description", "none_option", "tools"}
# An unknown key this close to a known one is a typo (an error); further off, a warning. difflib's
# usual 0.6 called keys a person adds on purpose typos: `output_schema` "did you mean 'schema'",
# `kind` 'id', `options` 'none_option'. 0.75 still catches `keywrds`, `rsik`, `shcema`, `tols`.
TYPO_CUTOFF = 0.75
# Other names for a known key: an error naming it (pydantic would otherwise take `input_schema`,
# the field's own name, while the warning said it was ignored).
KEY_ALIASES = {"input_schema": "schema", "inputSchema": "schema"}


def _unknown_key_hint(key: str, known: set[str]) -> str:
    if key in KEY_ALIASES:
        return f" (did you mean '{KEY_ALIASES[key]}'?)"
    return did_you_mean(key, known, cutoff=TYPO_CUTOFF)


class Catalog(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    none_option: str = DEFAULT_NONE_OPTION
    tools: tuple[Tool, ...]
    path: str | None = None
    warnings: tuple[str, ...] = ()

    def model_post_init(self, __context: Any) -> None:
        object.__setattr__(self, "_by_id", {t.id: t for t in self.tools})

    def get(self, option_id: str) -> Tool | None:
        return self._by_id.get(option_id)  # type: ignore[attr-defined]

    def __contains__(self, option_id: object) -> bool:
        return option_id in self._by_id  # type: ignore[attr-defined]

    @property
    def option_ids(self) -> list[str]:
        """Every option a label may name: tools, escalation options and the none option."""
        return [t.id for t in self.tools] + [self.none_option]

    def description_of(self, option_id: str) -> str:
        if option_id == self.none_option:
            return NONE_DESCRIPTION
        tool = self.get(option_id)
        return tool.when_to_use if tool else ""

    def risk_of(self, option_id: str) -> Risk | None:
        tool = self.get(option_id)
        return tool.risk if tool else None

    @property
    def escalation_ids(self) -> list[str]:
        return [t.id for t in self.tools if t.is_escalation]

    def categories(self) -> dict[str, list[Tool]]:
        groups: dict[str, list[Tool]] = {}
        for tool in self.tools:
            groups.setdefault(tool.category or "uncategorised", []).append(tool)
        return groups

    def content_hash(self) -> str:
        """Stable hash of everything routing depends on (for on-disk caches)."""
        payload = [t.model_dump(mode="json", by_alias=True) for t in self.tools]
        blob = json.dumps([self.none_option, payload], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def subset(self, ids: list[str], name: str | None = None) -> Catalog:
        keep = set(ids)
        return Catalog(
            name=name or self.name,
            description=self.description,
            none_option=self.none_option,
            tools=tuple(t for t in self.tools if t.id in keep),
        )


def _field_name(loc: tuple[Any, ...]) -> str:
    name = ".".join(str(p) for p in loc) if loc else "tool"
    return "schema" if name == "input_schema" else name


def _clean_msg(msg: str) -> str:
    return msg.removeprefix("Value error, ").replace("Input should be", "must be")


def parse_catalog(data: dict[str, Any], source: str = "<catalog>") -> Catalog:
    """Validate a parsed TOML document; raise CatalogError listing every problem."""
    problems: list[str] = []
    warnings: list[str] = []
    if "tools" not in data and ("session" in data or "turns" in data):
        # the mirror of session.is_catalog_shaped: one sentence, not "no tools" plus two unknown keys
        raise CatalogError(f"{source}: this is a session file ([session], [[turns]]), not a catalog file ([[tools]])")
    for key in data:
        if key not in CATALOG_KEYS:
            hint = _unknown_key_hint(key, CATALOG_KEYS)
            (problems if hint else warnings).append(f"{source}: unknown top-level key '{key}'{hint}")

    name = data.get("name", Path(source).stem if source != "<catalog>" else "catalog")
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{source}: 'name' must be a non-empty string")
        name = "catalog"
    none_option = data.get("none_option", DEFAULT_NONE_OPTION)
    if not isinstance(none_option, str) or not ID_PATTERN.fullmatch(none_option):
        problems.append(f"{source}: none_option {none_option!r} is not a valid option id")
        none_option = DEFAULT_NONE_OPTION

    raw_tools = data.get("tools")
    if raw_tools is None:
        problems.append(f"{source}: the catalog has no tools (add [[tools]] tables)")
        raw_tools = []
    elif not isinstance(raw_tools, list):
        problems.append(f"{source}: 'tools' must be an array of tables ([[tools]])")
        raw_tools = []
    elif not raw_tools:
        problems.append(f"{source}: the catalog has no tools (add [[tools]] tables)")

    tools: list[Tool] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_tools):
        if not isinstance(raw, dict):
            problems.append(f"{source}: tools[{index}]: must be a table")
            continue
        raw_id = raw.get("id")
        where = f"{source}: tools[{index}] (id {raw_id!r})" if raw_id is not None else f"{source}: tools[{index}]"
        for key in raw:
            if key not in TOOL_KEYS:
                hint = _unknown_key_hint(key, TOOL_KEYS)
                (problems if hint else warnings).append(f"{where}: unknown field '{key}'{hint}")
        if isinstance(raw_id, str):  # by the raw id, so a copy of an invalid first entry is still caught
            if raw_id in seen:
                problems.append(f"{where}: field 'id' duplicates tools[{seen[raw_id]}]")
                continue
            seen[raw_id] = index
        if "schema" in raw and not isinstance(raw["schema"], dict):
            problems.append(f"{where}: field 'schema' must be a table (a JSON Schema object)")
            raw = {k: v for k, v in raw.items() if k != "schema"}
        try:
            tool = Tool.model_validate(raw)
        except ValidationError as exc:
            for err in exc.errors():
                field = _field_name(err["loc"])
                msg = "is required" if err["type"] == "missing" else _clean_msg(err["msg"])
                if err["type"] == "string_pattern_mismatch" and field == "id":
                    msg = f"{raw.get('id')!r} is not a valid id (lower-case letter first, then a-z 0-9 _ . : -, at most 64 characters)"
                elif err["type"] == "string_too_short" and field == "when_to_use":
                    msg = "must not be empty"
                if field == "risk" and err["type"] == "enum":
                    msg = f"unknown risk {raw.get('risk')!r}; use one of {', '.join(r.value for r in Risk)}"
                problems.append(f"{where}: field '{field}' {msg}")
            continue
        if tool.id == none_option:
            problems.append(f"{where}: field 'id' collides with none_option '{none_option}'")
            continue
        tools.append(tool)

    description = data.get("description", "")
    if not isinstance(description, str):
        problems.append(f"{source}: 'description' must be a string")
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        # warnings too: fixing the errors should not reveal a second list
        raise CatalogError(f"{source}: {len(problems)} {noun} in the catalog", problems + [f"warning: {w}" for w in warnings])
    return Catalog(
        name=name.strip(),
        description=description,
        none_option=none_option,
        tools=tuple(tools),
        path=source,
        warnings=tuple(warnings),
    )


def resolve_catalog_path(spec: str | Path) -> Path:
    """A path, or the name of a bundled catalog ('demo', 'support')."""
    path = Path(spec).expanduser()
    if path.exists() or path.is_symlink():  # a dangling link or a loop: the reader says which
        return path
    bundled = bundled_catalogs()
    if str(spec) in bundled:
        return bundled[str(spec)]
    if path.suffix == "" and not path.parent.name:
        names = ", ".join(sorted(bundled)) or "none"
        raise CatalogError(f"{spec}: no such catalog file or bundled catalog (bundled: {names})")
    raise CatalogError(f"{path}: catalog file not found")


def load_catalog(spec: str | Path) -> Catalog:
    path = resolve_catalog_path(spec)
    return parse_catalog(tomlio.read_toml_file(path, "catalog", CatalogError), str(path))
