"""The console's theme kept between runs: `theme` in the config file (the console never writes it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_harness import make_app, make_config, notifications, settle
from cli_harness import tui_router

from tui_router.config import config_from_dict, load_config
from tui_router.errors import ConfigError


def test_theme_is_optional_and_checked_against_textuals_names(tmp_path: Path) -> None:
    assert config_from_dict({}).theme is None
    path = tmp_path / "c.toml"
    path.write_text('theme = "gruvbox"\n', encoding="utf-8")
    assert load_config(path).theme == "gruvbox"
    path.write_text('theme = "drakula"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    [line] = info.value.problems
    assert line.startswith(f"{path.resolve()}: 'theme' 'drakula' is not a Textual theme (did you mean 'dracula'?); the themes: ansi-dark, ")
    assert "textual-light" in line and "tokyo-night" in line


def test_an_unknown_theme_is_one_sentence_and_exit_2_in_the_cli(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('theme = "solarized"\n', encoding="utf-8")
    result = tui_router("route", "Text Jordan.", env={"TUI_ROUTER_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.returncode == 2
    assert "'theme' 'solarized' is not a Textual theme (did you mean 'solarized-dark'?)" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


async def test_the_configs_theme_applies_at_start_and_a_picked_one_says_how_to_keep_it(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path, theme="nord"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert app.theme == "nord"
        assert not [n for n in notifications(app) if n.startswith("Theme ")]  # the kept theme needs no note
        app.theme = "gruvbox"  # what palette: Theme does
        await pilot.pause()
        await pilot.pause()
        assert f'Theme gruvbox for this run; to keep it, add theme = "gruvbox" to {tmp_path / "tui-router.toml"}.' in notifications(app)
    assert not (tmp_path / "tui-router.toml").exists()  # the console does not write the config


async def test_without_a_theme_key_the_console_starts_in_textuals_default(tmp_path: Path) -> None:
    app = make_app(make_config(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert app.theme == "textual-dark"
        app.theme = "textual-dark"
        await pilot.pause()
        assert not [n for n in notifications(app) if n.startswith("Theme ")]


def test_the_readme_lists_every_theme_name() -> None:
    import re

    from textual.theme import BUILTIN_THEMES

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    paragraph = readme.split("`theme` is one of Textual's themes: ", 1)[1].split(" (another name", 1)[0]
    assert re.split(r",\s+", paragraph) == sorted(BUILTIN_THEMES)


async def test_config_reload_applies_a_theme_line_added_meanwhile(tmp_path: Path) -> None:
    # the notification's advice, followed: add the line, then palette `config: reload` applies it
    from app_harness import write_catalog

    path = tmp_path / "tui-router.toml"
    base = f'catalog = "{write_catalog(tmp_path)}"\nbackend = "local"\nsessions_dir = "{tmp_path / "sessions"}"\n'
    path.write_text(base, encoding="utf-8")
    app = make_app(load_config(path))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert app.theme == "textual-dark"
        path.write_text(base + 'theme = "tokyo-night"\n', encoding="utf-8")
        app.use_config_file(path)
        await settle(app, pilot)
        await pilot.pause()
        assert app.theme == "tokyo-night"
        assert not [n for n in notifications(app) if n.startswith("Theme ")]  # kept by the file: nothing to add
