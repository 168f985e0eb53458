"""Config discovery and validation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tui_router.config import Config, load_config
from tui_router.errors import ConfigError


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TUI_ROUTER_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_defaults_run_with_no_file() -> None:
    config = load_config()
    assert config.source is None
    assert config.backend == "auto" and config.catalog == "demo"
    assert (config.policy.high, config.policy.medium, config.policy.confidence) == (0.75, 0.45, "reference")
    assert config.retrieval.top_k == 5 and config.retrieval.direct_max == 8


def test_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = tmp_path / "xdg" / "tui-router" / "config.toml"
    xdg.parent.mkdir(parents=True)
    xdg.write_text("[policy]\nhigh = 0.9\n")
    assert load_config().policy.high == 0.9
    (tmp_path / "tui-router.toml").write_text("[policy]\nhigh = 0.8\n")
    assert load_config().policy.high == 0.8
    env = tmp_path / "env.toml"
    env.write_text("[policy]\nhigh = 0.7\n")
    monkeypatch.setenv("TUI_ROUTER_CONFIG", str(env))
    assert load_config().policy.high == 0.7
    explicit = tmp_path / "explicit.toml"
    explicit.write_text("[policy]\nhigh = 0.6\nmedium = 0.3\n")
    assert load_config(explicit).policy.high == 0.6


def test_unknown_key_did_you_mean(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[retrieval]\ntopk = 3\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.lines() == [f"{path.resolve()}: unknown key 'retrieval.topk' (did you mean 'top_k'?)"]


def test_unknown_section(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[fallbak]\ncommand = ['x']\n")
    with pytest.raises(ConfigError, match=r"unknown key 'fallbak' \(did you mean 'fallback'\?\)"):
        load_config(path)


def test_bad_values(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("backend = 'gpt'\n[policy]\nhigh = 0.3\nmedium = 0.6\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text = "\n".join(info.value.lines())
    assert "'backend' must be 'auto', 'local', 'bm25', 'systemone' or 'semantic'" in text
    assert "medium (0.6) must not be above high (0.3)" in text


def test_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[policy\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.toml")


def test_relative_paths_resolve_against_the_config_file(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    path = folder / "tui-router.toml"
    path.write_text("sessions_dir = 'runs'\ncatalog = 'cats/mine.toml'\n")
    config = load_config(path)
    assert config.sessions_path == folder.resolve() / "runs"
    assert config.catalog_spec() == folder.resolve() / "cats" / "mine.toml"
    assert Config().catalog_spec() == "demo"


def test_per_risk_thresholds() -> None:
    from tui_router.catalog import Risk
    from tui_router.config import config_from_dict

    config = config_from_dict({"policy": {"risk": {"write": {"high": 0.9, "medium": 0.6}}}})
    assert config.policy.thresholds_for(Risk.write).high == 0.9
    assert config.policy.thresholds_for(Risk.read).high == 0.75


def test_cli_bad_config_exits_2_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[polcy]\nhigh = 1\n")
    result = subprocess.run([sys.executable, "-m", "tui_router", "--config", str(path), "route", "hello"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "unknown key 'polcy' (did you mean 'policy'?)" in result.stderr


def test_locate(tmp_path: Path) -> None:
    # one predictable sessions folder: the user data folder, with or without a user config (issue 13)
    import os

    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "conf")}
    env.pop("TUI_ROUTER_CONFIG", None)
    expected = str(tmp_path / "data" / "tui-router" / "sessions")
    out = subprocess.run([sys.executable, "-m", "tui_router", "locate", "sessions"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0 and out.stdout.strip() == expected
    (tmp_path / "conf" / "tui-router").mkdir(parents=True)
    (tmp_path / "conf" / "tui-router" / "config.toml").write_text("[policy]\nhigh = 0.8\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "tui_router", "locate", "sessions"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0 and out.stdout.strip() == expected
    out = subprocess.run([sys.executable, "-m", "tui_router", "locate", "catalogs"], capture_output=True, text=True, cwd=tmp_path)
    assert "demo:" in out.stdout and "support:" in out.stdout
    out = subprocess.run([sys.executable, "-m", "tui_router", "locate", "config"], capture_output=True, text=True, cwd=tmp_path)
    assert "not present" in out.stdout
