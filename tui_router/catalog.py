"""The allowlisted catalog: Tool and Catalog models, loading and validation.

Validation collects every problem and reports one line each (file, tool index and id, field), so a
person fixing a catalog sees the whole list at once instead of one traceback at a time.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError

from . import tomlio
from .errors import CatalogError, UserError, did_you_mean
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


def _risk_word(value: Any) -> Any:
    """`risk = "Read"` / `"payment "`: an independently written catalog's risk in another case or
    with spaces is the risk it names (it refused the whole catalog); a misspelt one stays an error."""
    return value.strip().lower() if isinstance(value, str) else value


RiskWord = Annotated[Risk, BeforeValidator(_risk_word)]
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
    risk: RiskWord = Risk.read
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
    msg = msg.removeprefix("Value error, ").replace("Input should be", "must be")
    # pydantic names the Python type the field is parsed into: a person wrote a TOML array
    return msg.replace("must be a valid tuple", 'must be a list of strings (e.g. ["..."])')


_TOOLS_HEADER = re.compile(r"""^\s*\[\[\s*(?:tools|"tools"|'tools')\s*\]\]""")
_TABLE_HEADER = re.compile(r"^\s*\[")


class CatalogLines:
    """Where each [[tools]] table and its keys start in a catalog's text (1-based lines), so a
    message can say `file:line:` as compilers do and an editor can jump there. A catalog whose tools
    are not one `[[tools]]` header each (an inline array) gets no lines: better none than wrong ones."""

    def __init__(self, text: str, tools: int) -> None:
        self.lines = text.splitlines()
        starts = [n for n, line in enumerate(self.lines) if _TOOLS_HEADER.match(line)]
        self.starts = starts if len(starts) == tools else []

    def _key_line(self, first: int, stop: int, key: str) -> int | None:
        assign = re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
        for n in range(first, stop):
            line = self.lines[n]
            if _TABLE_HEADER.match(line):
                # a sub-table ([tools.schema]) may be the key itself; any other ends the tool's own keys
                return n + 1 if key == "schema" and re.match(r"^\s*\[\s*tools\s*\.\s*schema\s*[.\]]", line) else None
            if assign.match(line):
                return n + 1
        return None

    def tool(self, index: int, key: str | None = None) -> int | None:
        """The line of tools[index]'s `key` (its header when the key is not found or not given)."""
        if not 0 <= index < len(self.starts):
            return None
        start = self.starts[index]
        stop = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.lines)
        found = self._key_line(start + 1, stop, key) if key else None
        if found is None and key == "schema":  # [tools.schema] may come after sub-tables of other keys
            found = next((n + 1 for n in range(start + 1, stop) if re.match(r"^\s*\[\s*tools\s*\.\s*schema\s*[.\]]", self.lines[n])), None)
        return found or start + 1

    def top(self, key: str) -> int | None:
        """The line of a top-level key (before the first table), or of the table it names
        (`[[tool]]` for `tools`)."""
        stop = next((n for n, line in enumerate(self.lines) if _TABLE_HEADER.match(line)), len(self.lines))
        found = self._key_line(0, stop, key)
        if found is None:
            header = re.compile(rf"""^\s*\[\[?\s*(?:{re.escape(key)}|"{re.escape(key)}")\s*[\].]""")
            found = next((n + 1 for n, line in enumerate(self.lines) if header.match(line)), None)
        return found


def located(source: str, line: int | None, text: str) -> str:
    """`file:line: text` (or `file: text` when the line is unknown)."""
    return f"{source}:{line}: {text}" if line else f"{source}: {text}"


def suggested_id(raw: str) -> str:
    """A valid id close to what a person typed ('Book Grooming' -> 'book_grooming', 'réserver' ->
    'reserver'), or "" when nothing sensible is left."""
    import unicodedata

    folded = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9_.:-]+", "_", folded).strip("_.:-")
    slug = re.sub(r"^[^a-z]+", "", slug)[:64].rstrip("_.:-")
    return slug if ID_PATTERN.fullmatch(slug) else ""


# (tool index or None for the top level, key or None, sentence): located once the whole list is known
_Finding = tuple[int | None, str | None, str]


def parse_catalog(data: dict[str, Any], source: str = "<catalog>", text: Callable[[], str] | None = None) -> Catalog:
    """Validate a parsed TOML document; raise CatalogError listing every problem.

    `text`: the file's text, read only when there is something to say, so every problem and
    warning can name its line (`file:line: ...`)."""
    problems: list[_Finding] = []
    warnings: list[_Finding] = []
    if "tools" not in data and ("session" in data or "turns" in data):
        # the mirror of session.is_catalog_shaped: one sentence, not "no tools" plus two unknown keys
        raise CatalogError(f"{source}: this is a session file ([session], [[turns]]), not a catalog file ([[tools]])")
    for key in data:
        if key not in CATALOG_KEYS:
            hint = _unknown_key_hint(key, CATALOG_KEYS)
            (problems if hint else warnings).append((None, key, f"unknown top-level key '{key}'{hint}"))

    name = data.get("name", Path(source).stem if source != "<catalog>" else "catalog")
    if not isinstance(name, str) or not name.strip():
        problems.append((None, "name", "'name' must be a non-empty string"))
        name = "catalog"
    none_option = data.get("none_option", DEFAULT_NONE_OPTION)
    if not isinstance(none_option, str) or not ID_PATTERN.fullmatch(none_option):
        hint = f" (e.g. '{suggested_id(none_option)}')" if isinstance(none_option, str) and suggested_id(none_option) else ""
        problems.append((None, "none_option", f"none_option {none_option!r} is not a valid option id{hint}"))
        none_option = DEFAULT_NONE_OPTION

    raw_tools = data.get("tools")
    if raw_tools is None:
        problems.append((None, None, "the catalog has no tools (add [[tools]] tables)"))
        raw_tools = []
    elif not isinstance(raw_tools, list):
        problems.append((None, "tools", "'tools' must be an array of tables ([[tools]])"))
        raw_tools = []
    elif not raw_tools:
        problems.append((None, None, "the catalog has no tools (add [[tools]] tables)"))

    tools: list[Tool] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_tools):
        if not isinstance(raw, dict):
            problems.append((index, None, f"tools[{index}]: must be a table"))
            continue
        raw_id = raw.get("id")
        where = f"tools[{index}] (id {raw_id!r})" if raw_id is not None else f"tools[{index}]"
        for key in raw:
            if key not in TOOL_KEYS:
                hint = _unknown_key_hint(key, TOOL_KEYS)
                (problems if hint else warnings).append((index, key, f"{where}: unknown field '{key}'{hint}"))
        if isinstance(raw_id, str):  # by the raw id, so a copy of an invalid first entry is still caught
            if raw_id in seen:
                problems.append((index, "id", f"{where}: field 'id' duplicates tools[{seen[raw_id]}]{{line of {seen[raw_id]}}}"))
                continue
            seen[raw_id] = index
        if "schema" in raw and not isinstance(raw["schema"], dict):
            problems.append((index, "schema", f"{where}: field 'schema' must be a table (a JSON Schema object)"))
            raw = {k: v for k, v in raw.items() if k != "schema"}
        try:
            tool = Tool.model_validate(raw)
        except ValidationError as exc:
            for err in exc.errors():
                field = _field_name(err["loc"])
                msg = "is required" if err["type"] == "missing" else _clean_msg(err["msg"])
                if err["type"] == "string_pattern_mismatch" and field == "id":
                    better = suggested_id(str(raw.get("id")))
                    msg = (
                        f"{raw.get('id')!r} is not a valid id (lower-case letter first, then a-z 0-9 _ . : -, at most 64 characters)"
                        + (f"; e.g. '{better}'" if better and better not in seen else "")
                    )
                elif err["type"] == "string_too_short" and field == "when_to_use":
                    msg = "must not be empty"
                if field == "risk" and err["type"] == "enum":
                    risks = [r.value for r in Risk]
                    hint = did_you_mean(str(raw.get("risk")), risks) if isinstance(raw.get("risk"), str) else ""
                    msg = f"unknown risk {raw.get('risk')!r}{hint}; use one of {', '.join(risks)}"
                problems.append((index, field.split(".")[0] if field != "tool" else None, f"{where}: field '{field}' {msg}"))
            continue
        if tool.id == none_option:
            problems.append((index, "id", f"{where}: field 'id' collides with none_option '{none_option}'"))
            continue
        tools.append(tool)

    description = data.get("description", "")
    if not isinstance(description, str):
        problems.append((None, "description", "'description' must be a string"))
    lines = _lines_for(text, len(raw_tools)) if problems or warnings else None
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        # warnings too: fixing the errors should not reveal a second list
        raise CatalogError(
            f"{source}: {len(problems)} {noun} in the catalog",
            [_locate(source, lines, f) for f in problems] + [_locate(source, lines, f, "warning: ") for f in warnings],
        )
    return Catalog(
        name=name.strip(),
        description=description,
        none_option=none_option,
        tools=tuple(tools),
        path=source,
        warnings=tuple(_locate(source, lines, f) for f in warnings),
    )


def _lines_for(text: Callable[[], str] | None, tools: int) -> CatalogLines | None:
    if text is None:
        return None
    try:
        return CatalogLines(text(), tools)
    except (OSError, UserError, UnicodeDecodeError):  # it was readable a moment ago; messages go without lines
        return None


# "{line of 3}" / "{line of 3 examples}" in a finding: where that other tool (or its key) is
_LINE_OF = re.compile(r"\{line of (\d+)(?: (\w+))?\}")


def _locate(source: str, lines: CatalogLines | None, finding: _Finding, prefix: str = "") -> str:
    index, key, sentence = finding
    line = None
    if lines is not None:
        line = lines.top(key) if index is None and key else lines.tool(index, key) if index is not None else None
        # "duplicates tools[0]": say where tools[0] is, too
        def line_of(m: re.Match[str]) -> str:
            found = lines.tool(int(m.group(1)), m.group(2) or "id")
            return f" (line {found})" if found else ""

        sentence = _LINE_OF.sub(line_of, sentence)
    else:
        sentence = _LINE_OF.sub("", sentence)
    return prefix + located(source, line, sentence)


def catalog_lines(path: str | Path, tools: int) -> CatalogLines | None:
    """The line map of a catalog file (for messages made after loading, such as `catalog validate`'s)."""
    return _lines_for(lambda: _read_text(Path(path)), tools)


def _read_text(path: Path) -> str:
    return tomlio.read_file_bytes(path, "catalog", CatalogError).decode("utf-8")


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
    return parse_catalog(tomlio.read_toml_file(path, "catalog", CatalogError), str(path), text=lambda: _read_text(path))


# -- authoring advice (`catalog validate` only: it reads the file again and costs more than a load) --

# when_to_use is the option's text in every question the decision model is asked: a paragraph of
# documentation pasted there drowns the sentence that tells two tools apart
LONG_WHEN_TO_USE = 1000
# share of when_to_use's content words two tools have in common above which the router cannot be
# expected to tell them apart (the demo catalog's closest pair, export_csv / import_csv, is at 0.42)
NEAR_DUPLICATE = 0.8
# a word this common is not used to find near-duplicate candidates (it would pair everything with
# everything on a 10,000-tool catalog); the pairs are still scored on every word
_CANDIDATE_POSTINGS = 64
_ESCALATION_LIKE_ID = re.compile(r"^(ask_user|human_review|escalat\w*|hand_?off\w*|ask_a?_?human\w*)$")
_NONE_LIKE_ID = re.compile(r"^(none|none_of_(these|the_above)|no_?tool|no_?match|nothing|other|fallback)$")
_NONE_LIKE_TEXT = re.compile(r"^\s*(none of (these|the)|no (other )?tool)", re.IGNORECASE)


def authoring_warnings(catalog: Catalog, raw_tools: list[Any] | None = None, lines: CatalogLines | None = None) -> list[str]:
    """What a catalog's author should look at though routing works: empty fields and lists, a
    keyword keyword matching skips, a when_to_use too long to be an option's text, escalation and
    none options set up so they do not act as such, near-identical tools and shared examples. One
    sentence each, `file:line:` first; none blocks anything. `raw_tools`: the file's [[tools]]
    tables as parsed (they tell `examples = []` from no examples)."""
    from .textnorm import tokenize

    source = catalog.path or "<catalog>"
    found: list[_Finding] = []
    raw = raw_tools if raw_tools is not None and len(raw_tools) == len(catalog.tools) else [{}] * len(catalog.tools)
    for index, (tool, table) in enumerate(zip(catalog.tools, raw, strict=True)):
        where = f"tools[{index}] (id {tool.id!r})"
        for key in ("examples", "keywords"):
            value = table.get(key) if isinstance(table, dict) else None
            if isinstance(value, list) and not value:
                what = "a request or two a user would type" if key == "examples" else "words a request for it would use"
                found.append((index, key, f"{where}: field '{key}' is an empty list: add {what}, or leave the key out"))
            for n, item in enumerate(getattr(tool, key)):
                if not item:
                    found.append((index, key, f"{where}: {key}[{n}] is empty"))
        for key in ("title", "category"):
            value = getattr(tool, key)
            if value is not None and not value.strip():
                found.append((index, key, f"{where}: field '{key}' is empty: name it, or leave the key out"))
        if len(tool.when_to_use) > LONG_WHEN_TO_USE:
            found.append((index, "when_to_use", (
                f"{where}: field 'when_to_use' is {len(tool.when_to_use):,} characters: it is the option's text in every "
                f"question (embeddings read only its start); say when to use the tool in a sentence or two (under "
                f"{LONG_WHEN_TO_USE:,} characters) and move the detail to examples and keywords"
            )))
        for keyword in tool.keywords:
            # one word only: a phrase of common words ("what's on") is matched whole by the embeddings
            if len(keyword.split()) == 1 and not tokenize(keyword):
                found.append((index, "keywords", (
                    f"{where}: keyword {keyword!r} is a stop word (or a single letter): keyword matching (BM25 retrieval, "
                    "the local backend) skips it, only the embeddings read it; a word that names the task works for both"
                )))
        if not tool.is_escalation and _ESCALATION_LIKE_ID.match(tool.id):
            found.append((index, "risk", (
                f"{where}: reads like an escalation option, but its risk is '{tool.risk.value}': it would be proposed "
                'for execution like a tool; set risk = "escalation" to hand such turns to a person'
            )))
        if _NONE_LIKE_ID.match(tool.id) or _NONE_LIKE_TEXT.match(tool.when_to_use):
            found.append((index, "id", (
                f"{where}: looks like a \"none of these\" option; the catalog has one built in ('{catalog.none_option}', "
                "offered in every question; none_option renames it): as a tool this one competes with it; remove it"
            )))
    if not catalog.escalation_ids:
        found.append((None, None, (
            'no escalation option (risk = "escalation"): a request that needs a person or a clarifying question '
            "can only go to the fallback; add ask_user and human_review (see the demo catalog: tui-router locate catalogs)"
        )))
    found += _shared_examples(catalog)
    found += _near_duplicates(catalog, tokenize)
    # in file order (tool by tool, the catalog-wide ones last): read top to bottom while fixing
    found.sort(key=lambda f: len(catalog.tools) if f[0] is None else f[0])
    return [_locate(source, lines, f, "warning: ") for f in found]


def _shared_examples(catalog: Catalog) -> list[_Finding]:
    first: dict[str, int] = {}
    found: list[_Finding] = []
    for index, tool in enumerate(catalog.tools):
        for example in dict.fromkeys(" ".join(e.lower().split()) for e in tool.examples if e):
            if example in first and first[example] != index:
                j = first[example]
                found.append((index, "examples", (
                    f"tools[{index}] (id {tool.id!r}): the example {shorten_text(example)!r} is also one of tools[{j}] "
                    f"(id {catalog.tools[j].id!r}){{line of {j} examples}}: it teaches both, so it tells them apart for neither"
                )))
            first.setdefault(example, index)
    return found


def _near_duplicates(catalog: Catalog, tokenize: Callable[[str], list[str]]) -> list[_Finding]:
    from collections import Counter

    sets = [frozenset(tokenize(t.when_to_use)) for t in catalog.tools]
    postings: dict[str, list[int]] = {}
    found: list[_Finding] = []
    for i, words in enumerate(sets):
        shared: Counter[int] = Counter()
        for word in words:
            for j in postings.get(word, ())[:_CANDIDATE_POSTINGS]:
                shared[j] += 1
        # one line per tool, naming its closest earlier twin (the first on a tie) and how many more:
        # 10,000 copies of one text were 640,000 lines (each paired with up to 64 earlier ones)
        close = sorted(
            ((-(common / len(words | sets[j])), j) for j, common in shared.items() if common / len(words | sets[j]) >= NEAR_DUPLICATE)
        )
        if close:
            overlap, j = -close[0][0], close[0][1]
            a, b = catalog.tools[i], catalog.tools[j]
            same = " ".join(a.when_to_use.lower().split()) == " ".join(b.when_to_use.lower().split())
            how = "the same when_to_use" if same else f"near-identical when_to_use ({overlap:.0%} of their words shared)"
            # not counted: the candidates are capped (_CANDIDATE_POSTINGS), a count would be wrong
            others = " (and other earlier tools like it)" if len(close) > 1 else ""
            found.append((i, "when_to_use", (
                f"tools[{i}] (id {a.id!r}) and tools[{j}] (id {b.id!r}){{line of {j} when_to_use}} have {how}{others}: the router cannot tell "
                "them apart; say in each what makes it the one to use, or keep one"
            )))
        for word in words:
            postings.setdefault(word, []).append(i)
    return found


def shorten_text(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
