"""The mcp-train sets (benchmarks/data/mcp/mcp-train-{a,b,c}): training/development data on real MCP
servers that neither mcp-blind nor mcp-dev uses. Their catalogs are build_mcp_catalogs.py's output,
their cases load, label only options of their catalog, follow the tag scheme of mcp-dev, and their
header states the counts the file really has. Loaders only: no router, no turn text shown."""

from __future__ import annotations

import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from tui_router.catalog import load_catalog
from tui_router.session import load_session

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from independent_eval import MCP as MCP_PROVENANCE  # noqa: E402
from independent_eval import SETS  # noqa: E402

MCP = ROOT / "benchmarks" / "data" / "mcp"
NAMES = ["mcp-train-a", "mcp-train-b", "mcp-train-c"]
# name: (turns low, high; tools low, high; least turns a tag has; least human_review, ask_user, defer_to_llm labels)
SIZES = {
    "mcp-train-a": (380, 450, 80, 160, 12, (25, 8, 40)),
    "mcp-train-b": (380, 450, 80, 160, 12, (25, 8, 40)),
    "mcp-train-c": (240, 300, 40, 80, 9, (15, 5, 25)),  # the small third one: HubSpot + Todoist
}
TAGS = {"plain", "paraphrase", "terse", "typo", "multilingual", "sibling", "none", "lure", "escalation", "injection"}
ESCALATION = {"ask_user", "human_review"}


def _spec() -> dict:
    return tomllib.loads((MCP / "merged.toml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", NAMES)
def test_cases_load_and_label_only_options_of_their_catalog(name: str) -> None:
    catalog = load_catalog(str(MCP / f"{name}.toml"))
    session = load_session(MCP / f"{name}-cases.toml")
    assert session.session.catalog == catalog.name == name
    options = set(catalog.option_ids)
    assert catalog.none_option == "defer_to_llm" and ESCALATION <= options
    bad = sorted({x for t in session.turns for x in [t.label, *t.acceptable] if x not in options})
    assert not bad, f"labels that are not options of {name}: {bad[:5]}"
    assert all(t.label for t in session.turns)
    low, high = SIZES[name][:2]
    assert low <= len(session.turns) <= high
    # most of the catalog is a label somewhere, so a model fitted on it sees most tools
    tools = {t.id for t in catalog.tools if t.risk.value != "escalation"}
    labelled = {x for t in session.turns for x in [t.label, *t.acceptable]} & tools
    assert len(labelled) >= 0.9 * len(tools)


@pytest.mark.parametrize("name", NAMES)
def test_tags_follow_the_scheme_and_labels_fit_the_tags(name: str) -> None:
    turns = load_session(MCP / f"{name}-cases.toml").turns
    for t in turns:
        plain = {x for x in t.tags if not x.startswith("lang:")}
        langs = [x for x in t.tags if x.startswith("lang:")]
        assert plain and plain <= TAGS, t.tags
        assert ("multilingual" in plain) == (len(langs) == 1), t.tags
        if "none" in plain:
            assert t.label == "defer_to_llm"
        if "escalation" in plain:
            assert t.label in ESCALATION
        if "injection" in plain:
            # an injection is never a plain tool call: a person looks, or (touching no tool) the LLM answers
            assert t.label in ("human_review", "defer_to_llm")
            assert t.label == "human_review" or "none" in plain
    tags = Counter(x for t in turns for x in t.tags)
    assert len([x for x in tags if x.startswith("lang:")]) >= 10
    least_tag, (review, ask, defer) = SIZES[name][4:]
    assert all(tags[x] >= least_tag for x in TAGS), tags
    labels = Counter(t.label for t in turns)
    assert labels["human_review"] >= review and labels["ask_user"] >= ask and labels["defer_to_llm"] >= defer
    # injections that also ask for a harmless tool action carry that tool as acceptable
    assert sum(1 for t in turns if "injection" in t.tags and t.acceptable) >= 3


@pytest.mark.parametrize("name", NAMES)
def test_header_states_the_counts_the_file_has(name: str) -> None:
    text = (MCP / f"{name}-cases.toml").read_text(encoding="utf-8")
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    assert "TRAINING/DEVELOPMENT set" in header and "one pass" in header
    turns = load_session(MCP / f"{name}-cases.toml").turns
    stated = re.search(r"# (\d+) turns\. Tag counts: ([^.]+)\.", header)
    assert stated, header
    assert int(stated.group(1)) == len(turns)
    counts = Counter(x for t in turns for x in t.tags if not x.startswith("lang:"))
    assert {k: int(v) for k, v in (part.rsplit(" ", 1) for part in stated.group(2).split(", "))} == {k: counts[k] for k in TAGS}


def test_train_servers_are_in_neither_blind_nor_dev_and_sizes_fit() -> None:
    spec = _spec()["catalogs"]
    held = {server for name in ("mcp-blind", "mcp-dev") for server, _prefix in spec[name]["servers"]}
    seen: set[str] = set()
    for name in NAMES:
        servers = {server for server, _prefix in spec[name]["servers"]}
        assert not servers & held, f"{name} shares servers with mcp-blind/mcp-dev: {servers & held}"
        assert not servers & seen, f"{name} shares servers with another train catalog"
        seen |= servers
        catalog = load_catalog(str(MCP / f"{name}.toml"))
        tools = [t for t in catalog.tools if t.risk.value != "escalation"]
        low, high = SIZES[name][2:4]
        assert low <= len(tools) <= high
        assert {t.category for t in tools} == servers
        assert all("." in t.id for t in tools)


def test_independent_eval_runs_them_as_real_mcp_sets_not_blind() -> None:
    for name in NAMES:
        catalog_path, cases_path, provenance, blind = SETS[name]
        assert (catalog_path, cases_path) == (MCP / f"{name}.toml", MCP / f"{name}-cases.toml")
        assert provenance == MCP_PROVENANCE and not blind
