"""The independent eval sets (benchmarks/data/mcp, benchmarks/data/public): every catalog validates, every
cases file loads, names its catalog, and labels only options of it. Loaders only: no router, no turn text shown."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from tui_router.catalog import load_catalog
from tui_router.session import load_session

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from independent_eval import SETS  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
MCP = DATA / "mcp"
PAIRS = [
    (MCP / "mcp-blind.toml", MCP / "mcp-blind-cases.toml"),
    (MCP / "mcp-dev.toml", MCP / "mcp-dev-cases.toml"),
    *[(cat, cat.with_name(f"{cat.stem}-{half}.toml")) for cat in sorted((DATA / "public").glob("*/*.toml"))
      if not cat.stem.endswith(("-dev", "-heldout")) for half in ("dev", "heldout")],
]


@pytest.mark.parametrize(("catalog_path", "cases_path"), PAIRS, ids=lambda p: p.name)
def test_cases_label_options_of_their_catalog(catalog_path: Path, cases_path: Path) -> None:
    catalog = load_catalog(str(catalog_path))
    session = load_session(cases_path)
    assert session.session.catalog == catalog.name
    options = set(catalog.option_ids)
    labelled = [t for t in session.turns if t.label]
    assert labelled, cases_path
    bad = sorted({x for t in labelled for x in [t.label, *t.acceptable] if x not in options})
    assert not bad, f"{cases_path.name}: labels that are not options of {catalog.name}: {bad[:5]}"


def test_every_server_catalog_and_merged_catalog_validates() -> None:
    servers = sorted((MCP / "servers").glob("*.toml"))
    assert len(servers) >= 20
    for path in [*servers, MCP / "mcp-blind.toml", MCP / "mcp-dev.toml"]:
        load_catalog(str(path))  # raises CatalogError on any problem


def test_merged_catalogs_are_what_the_build_script_makes() -> None:
    import build_mcp_catalogs

    assert build_mcp_catalogs.main(["--check"]) == 0


def test_merged_catalog_shape() -> None:
    for name, low, high in (("mcp-blind", 90, 130), ("mcp-dev", 100, 200)):
        catalog = load_catalog(str(MCP / f"{name}.toml"))
        tools = [t for t in catalog.tools if t.risk.value != "escalation"]
        assert low <= len(tools) <= high
        assert {t.id for t in catalog.tools} >= {"ask_user", "human_review"}
        assert all("." in t.id and t.category for t in tools)


def test_runner_knows_every_set_and_its_files_exist() -> None:
    for name, (catalog_path, cases_path, provenance, _blind) in SETS.items():
        assert catalog_path.is_file() and cases_path.is_file(), name
        assert provenance
        assert tomllib.loads(cases_path.read_text(encoding="utf-8"))["session"]["catalog"] == load_catalog(str(catalog_path)).name
