"""The `route --json` contract, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tui_router.embed import semantic_available

CLI = [sys.executable, "-m", "tui_router"]


def route(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "route", *args], capture_output=True, text=True, cwd=cwd, env=None)


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TUI_ROUTER_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_json_contract(tmp_path: Path) -> None:
    result = route("--json", "--backend", "local", "Text Jordan that the deploy finished.", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # exactly one JSON object
    for key in ("message", "candidates", "choice", "probabilities", "confidence", "reported_confidence", "band", "action", "model", "latency_ms", "error"):
        assert key in data
    assert data["choice"] == "send_sms" and data["band"] in {"high", "medium"}
    assert all(set(c) >= {"id", "score"} for c in data["candidates"])
    offered = {c["id"] for c in data["candidates"]} | {"defer_to_llm"}
    assert set(data["probabilities"]) == offered
    assert abs(sum(data["probabilities"].values()) - 1.0) < 1e-6
    assert data["action"] in {"execute", "confirm", "escalate", "fallback"}
    assert data["model"] == "local-lexical-1"


def test_default_backend_is_semantic_when_installed(tmp_path: Path) -> None:
    result = route("--json", "Text Jordan that the deploy finished.", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["choice"] == "send_sms"
    # the default backend (auto): semantic when its extra is installed, local otherwise
    assert data["backend"] == ("semantic" if semantic_available() else "local")
    assert data["model"].startswith("semantic-e5-fitted" if semantic_available() else "local-lexical-1")


def test_haiku_falls_back(tmp_path: Path) -> None:
    data = json.loads(route("--json", "Write a haiku about rain", cwd=tmp_path).stdout)
    assert data["action"] == "fallback" and data["choice"] == "defer_to_llm"


def test_bm25_backend_and_other_catalog(tmp_path: Path) -> None:
    data = json.loads(route("--json", "--backend", "bm25", "--catalog", "support", "how are credits calculated in the docs", cwd=tmp_path).stdout)
    assert data["backend"] == "bm25" and data["retrieval"] == "direct" and data["choice"] == "search_docs"


def test_readable_summary(tmp_path: Path) -> None:
    result = route("export orders to csv", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("choice      export_csv")


def test_huge_and_strange_messages(tmp_path: Path) -> None:
    big = ("data [red]markup[/red] \x00 " * 5000)[:100_000]
    result = subprocess.run([*CLI, "route", "--json", "-"], input=big, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0
    assert json.loads(result.stdout)["message"] == big


def test_bad_catalog_exit_2(tmp_path: Path) -> None:
    result = route("--catalog", str(tmp_path / "missing.toml"), "hello", cwd=tmp_path)
    assert result.returncode == 2 and "catalog file not found" in result.stderr and "Traceback" not in result.stderr


def test_unknown_backend(tmp_path: Path) -> None:
    result = route("--backend", "lokal", "hello", cwd=tmp_path)
    assert result.returncode == 2 and "did you mean 'local'" in result.stderr


def test_route_does_not_import_textual() -> None:
    code = (
        "import sys\n"
        "from tui_router.cli import main\n"
        "main(['route', '--json', 'export orders to csv'])\n"
        "assert 'textual' not in sys.modules, 'route imported textual'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_help_on_every_command() -> None:
    for args in (["--help"], ["route", "--help"], ["catalog", "validate", "--help"], ["locate", "--help"]):
        result = subprocess.run([*CLI, *args], capture_output=True, text=True)
        assert result.returncode == 0 and "usage:" in result.stdout


@pytest.mark.skipif(not semantic_available(), reason="the semantic extra is not installed")
def test_an_embedding_cache_that_cannot_be_written_is_one_warning_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The cache fails soft (vectors kept in memory), and `route` used to say nothing about it: the
    # next run embedded the catalog again, with no word why. One warning line on stderr now.
    from app_harness import write_catalog

    catalog = write_catalog(tmp_path)  # not a bundled catalog: its option vectors must be written
    message = "Remind me to call mum on Sunday."
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fine = route("--json", "--backend", "semantic", "--catalog", str(catalog), message, cwd=tmp_path)
    assert fine.returncode == 0 and fine.stderr == "", fine.stderr
    (tmp_path / "not-a-folder").write_text("a file\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))
    failed = route("--json", "--backend", "semantic", "--catalog", str(catalog), message, cwd=tmp_path)
    assert failed.returncode == fine.returncode == 0
    [line] = failed.stderr.splitlines()
    assert line.startswith(f"tui-router: warning: cannot write the embedding cache in {tmp_path}/not-a-folder/tui-router/embeddings/")
    assert line.endswith(" (Not a directory); kept in memory")
    unchanged = ("choice", "probabilities", "band", "action", "confidence", "candidates")
    assert {k: json.loads(failed.stdout)[k] for k in unchanged} == {k: json.loads(fine.stdout)[k] for k in unchanged}
