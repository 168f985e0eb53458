"""The catalog author's journey: a catalog written by hand from scratch, with the slips people make,
through `catalog validate`, `route --catalog` and the console (edited while it runs).

Every error is one sentence that starts `file:line:` (an editor jumps there) with a did-you-mean
where one helps, exit 2, nothing written; warnings (near-identical tools, empty fields, a stop word
as keyword, escalation and none options that do not act as such) are shown and never block.
"""

from __future__ import annotations

import contextlib
import tomllib
from pathlib import Path

import pytest
from app_harness import make_app, notifications, settle, submit
from cli_harness import tui_router
from textual.worker import WorkerFailed

from tui_router.catalog import CatalogLines, authoring_warnings, load_catalog, suggested_id
from tui_router.config import config_from_dict
from tui_router.errors import CatalogError

GOOD = """\
name = "petshop"
description = "A pet shop's assistant"

[[tools]]
id = "book_grooming"
when_to_use = "Book a grooming appointment (bath, haircut, nails) for a pet."
category = "appointments"
risk = "write"
keywords = ["groom", "haircut", "bath"]
examples = ["Book a bath for my dog on Saturday"]

[[tools]]
id = "order_food"
when_to_use = "Order pet food or treats for home delivery."
category = "shop"
risk = "payment"
keywords = ["food", "kibble", "treats"]

[[tools]]
id = "ask_user"
when_to_use = "Ask the customer which pet, day or product they mean when the request leaves it open."
risk = "escalation"

[[tools]]
id = "human_review"
when_to_use = "Hand the request to a person: complaints, refunds outside policy, a sick animal."
risk = "escalation"
"""

# every slip of Part 2 that still parses: each is a warning, none blocks
SLIPS = """\
name = "petshop"

[[tools]]
id = "book_grooming"
when_to_use = "Book a grooming appointment for a pet."
risk = "write"
keywords = ["groom", "the"]
examples = ["Book a bath for my dog"]

[[tools]]
id = "book_groom"
when_to_use = "Book a grooming appointment for a pet!"
title = ""
examples = ["book a bath for my dog"]

[[tools]]
id = "order_food"
when_to_use = "{huge}"
examples = []

[[tools]]
id = "human_review"
when_to_use = "Hand the request to a person."
risk = "read"

[[tools]]
id = "none"
when_to_use = "None of these tools fits."
"""


def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    return {"TUI_ROUTER_CONFIG": str(tmp_path / "empty.toml"), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def write(tmp_path: Path, text: str, name: str = "mine.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- catalog validate: errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # an unclosed quote: the line and what to do
        ('id = "t"\nwhen_to_use = "Book a bath\n', ":5: not valid TOML: Illegal character '\\n' (column 27): a quoted text is not closed on this line"),
        # a list left open is found "at the end of the document": the line where it opened is named
        ('id = "t"\nwhen_to_use = "x"\nkeywords = ["a", "b"\n\n[[tools]]\nid = "u"\nwhen_to_use = "u"\n', ":6: not valid TOML: Unclosed array: the list that opens on this line is not closed: add ]"),
        ('id = "t"\nwhen_to_use = "x"\nkeywords = ["a" "b"]\n', ":6: not valid TOML: Unclosed array (column 17): the items of a list are separated by commas (one is missing)"),
        ('id = "t"\nwhen_to_use = "x"\nrisk = write\n', ':6: not valid TOML: Invalid value (column 8): a text value needs quotes (risk = "write")'),
        # a list opened last in the file, or before the next key, is "Invalid value" to tomllib: the open list is named
        ('id = "t"\nwhen_to_use = "x"\nkeywords = [\n', ":6: not valid TOML: Invalid value: the list that opens on this line is not closed: add ]"),
        ('id = "t"\nkeywords = [\n"a",\nwhen_to_use = "x"\n', ":5: not valid TOML: Invalid value: the list that opens on this line is not closed: add ]"),
        # a list closed over several lines is no slip: a bare value after it keeps its own hint
        ('id = "t"\nkeywords = [\n"a",\n]\nrisk = write\n', ':8: not valid TOML: Invalid value (column 8): a text value needs quotes (risk = "write")'),
        ('id = "t"\nwhen_to_use = "x"\n[tools]\n', ":6: not valid TOML: Cannot declare ('tools',) twice (column 7): each tool starts with [[tools]], two brackets on each side"),
    ],
)
def test_a_toml_syntax_error_is_one_sentence_with_its_line_and_the_likely_fix(tmp_path: Path, body: str, expected: str) -> None:
    path = write(tmp_path, 'name = "x"\n\n[[tools]]\n' + body)
    before = path.read_bytes()
    done = tui_router("catalog", "validate", str(path), env=env(tmp_path))
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"tui-router: {path}{expected}"), line
    assert path.read_bytes() == before


def test_every_field_error_names_its_line_with_a_did_you_mean(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
name = "petshop"

[[tools]]
id = "book_grooming"
when_to_use = "Book a grooming appointment."
keywrds = ["groom"]
risk = "escalate"

[[tools]]
id = "Book Grooming"
when_to_use = "Book a grooming appointment."

[[tools]]
id = "book_grooming"
when_to_use = "A copy."

[[tools]]
id = "réserver_Toilettage"
when_to_use = "Réserver un toilettage."

[[tools]]
id = "order_food"
when_to_use = ""
examples = "Order kibble"
""",
    )
    done = tui_router("catalog", "validate", str(path), env=env(tmp_path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"tui-router: {path}:6: tools[0] (id 'book_grooming'): unknown field 'keywrds' (did you mean 'keywords'?)",
        f"tui-router: {path}:7: tools[0] (id 'book_grooming'): field 'risk' unknown risk 'escalate' (did you mean 'escalation'?); "
        "use one of read, write, outbound, payment, permission, escalation",
        # its slug is an id the catalog has already: not offered
        f"tui-router: {path}:10: tools[1] (id 'Book Grooming'): field 'id' 'Book Grooming' is not a valid id "
        "(lower-case letter first, then a-z 0-9 _ . : -, at most 64 characters)",
        f"tui-router: {path}:14: tools[2] (id 'book_grooming'): field 'id' duplicates tools[0] (line 4)",
        f"tui-router: {path}:18: tools[3] (id 'réserver_Toilettage'): field 'id' 'réserver_Toilettage' is not a valid id "
        "(lower-case letter first, then a-z 0-9 _ . : -, at most 64 characters); e.g. 'reserver_toilettage'",
        f"tui-router: {path}:23: tools[4] (id 'order_food'): field 'when_to_use' must not be empty",
        f"tui-router: {path}:24: tools[4] (id 'order_food'): field 'examples' must be a list of strings (e.g. [\"...\"])",
    ]


def test_route_and_eval_refuse_a_broken_catalog_with_the_same_lines(tmp_path: Path) -> None:
    path = write(tmp_path, 'name = "x"\n\n[[tools]]\nid = "a"\nwhen_to_use = "A."\nrisk = "wirte"\n')
    done = tui_router("--catalog", str(path), "route", "hello", env=env(tmp_path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"tui-router: {path}:6: tools[0] (id 'a'): field 'risk' unknown risk 'wirte' (did you mean 'write'?); "
        "use one of read, write, outbound, payment, permission, escalation"
    ]


def test_suggested_ids() -> None:
    assert suggested_id("Book Grooming") == "book_grooming"
    assert suggested_id("réserver") == "reserver"
    assert suggested_id("2nd-try") == "nd-try"
    assert suggested_id("日本") == ""  # nothing left to suggest


def test_a_catalog_of_inline_tables_gets_no_line_numbers_rather_than_wrong_ones() -> None:
    lines = CatalogLines('name = "x"\ntools = [{id = "a", when_to_use = "A"}]\n', tools=1)
    assert lines.tool(0, "id") is None


# -- catalog validate: warnings ------------------------------------------------------------------


def test_the_slips_that_parse_are_warnings_with_lines_and_do_not_block(tmp_path: Path) -> None:
    path = write(tmp_path, SLIPS.replace("{huge}", "Order pet food. " * 99 + "Order it."))
    done = tui_router("catalog", "validate", str(path), env=env(tmp_path))
    assert done.returncode == 0, done.stderr
    warnings = done.stderr.splitlines()
    assert all(line.startswith(f"tui-router: warning: {path}") for line in warnings), warnings
    text = "\n".join(warnings)
    expected = [
        f"{path}:7: tools[0] (id 'book_grooming'): keyword 'the' is a stop word",
        f"{path}:13: tools[1] (id 'book_groom'): field 'title' is empty: name it, or leave the key out",
        f"{path}:18: tools[2] (id 'order_food'): field 'when_to_use' is 1,593 characters",
        f"{path}:19: tools[2] (id 'order_food'): field 'examples' is an empty list: add a request or two a user would type, or leave the key out",
        f"{path}:24: tools[3] (id 'human_review'): reads like an escalation option, but its risk is 'read'",
        f"{path}:27: tools[4] (id 'none'): looks like a \"none of these\" option; the catalog has one built in ('defer_to_llm'",
        f"{path}: no escalation option (risk = \"escalation\")",
        f"{path}:14: tools[1] (id 'book_groom'): the example 'book a bath for my dog' is also one of tools[0] (id 'book_grooming') (line 8)",
        f"{path}:12: tools[1] (id 'book_groom') and tools[0] (id 'book_grooming') (line 5) have near-identical when_to_use (100% of their words shared)",
    ]
    for start in expected:
        assert start in text, start
    assert len(warnings) == len(expected)
    assert done.stdout.strip() == (
        f"{path}: ok - catalog 'petshop', 5 tools + 0 escalation options in 1 category, none option 'defer_to_llm'; "
        f"{len(expected)} warnings (on stderr), none blocking"
    )


def test_a_clean_catalog_validates_without_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    done = tui_router("catalog", "validate", str(path), env=env(tmp_path))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip().endswith("2 tools + 2 escalation options in 3 categories, none option 'defer_to_llm'")


def test_tools_that_differ_enough_are_not_called_near_duplicates() -> None:
    # the bundled demo keeps six near-duplicate pairs on purpose, each told apart by its text
    demo = load_catalog("demo")
    assert not [w for w in authoring_warnings(demo) if "when_to_use" in w and "tools[" in w and " and tools[" in w]
    assert not [w for w in authoring_warnings(demo) if "is also one of" in w or "escalation option" in w]


# -- route and the console -----------------------------------------------------------------------


def test_route_with_a_catalog_says_its_ignored_fields(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace('risk = "payment"', 'risk = "payment"\nowner = "shop team"'))
    done = tui_router("--catalog", str(path), "--backend", "local", "route", "--json", "order some kibble for my cat", env=env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"tui-router: warning: {path}:17: tools[1] (id 'order_food'): unknown field 'owner'"]


async def test_the_console_reloads_a_catalog_edited_while_it_runs(tmp_path: Path) -> None:
    catalog = write(tmp_path, GOOD)
    config = config_from_dict({"catalog": str(catalog), "backend": "local", "sessions_dir": str(tmp_path / "sessions")}, tmp_path / "tui-router.toml")
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.router is not None and [t.id for t in app.router.catalog.tools][:2] == ["book_grooming", "order_food"]
        await submit(app, pilot, "book a bath for my dog")

        # a tool added and saved: the next check reloads it (no restart, no command needed)
        catalog.write_text(GOOD + '\n[[tools]]\nid = "track_order"\nwhen_to_use = "Say where a placed order is."\n', encoding="utf-8")
        app._check_catalog_file()
        await settle(app, pilot)
        assert "track_order" in app.router.catalog
        said = notifications(app)
        assert any("changed on disk: reloaded. Catalog petshop, backend local" in n for n in said), said

        # a broken save: the catalog as loaded keeps routing, and the notification says file and line
        catalog.write_text(GOOD.replace('risk = "write"', 'risk = "wirte"'), encoding="utf-8")
        app._check_catalog_file()
        with contextlib.suppress(WorkerFailed):  # the load fails in its worker, as it should
            await app.workers.wait_for_complete()
        await settle(app, pilot)
        app._check_catalog_file()  # said at the next check, the file still as read (not a save half done)
        await settle(app, pilot)
        assert "track_order" in app.router.catalog  # the previous catalog stays in use
        assert any(f"{catalog}:8: tools[0] (id 'book_grooming'): field 'risk' unknown risk 'wirte' (did you mean 'write'?)" in n for n in notifications(app))
        # and it says what is still in use, so the error does not read as a console that stopped routing
        assert any(n.endswith("Still routing with catalog 'petshop' as loaded before.") and ":8:" in n for n in notifications(app)), notifications(app)
        await submit(app, pilot, "order kibble for my cat")
        assert app.session.turns[1].decision is not None and app.session.turns[1].decision.choice is not None

        # nothing changed since: no second reload, no second notification
        count = len(notifications(app))
        app._check_catalog_file()
        await settle(app, pilot)
        assert len(notifications(app)) == count

        # fixed, with an unknown field: reloaded, and the warning said once
        catalog.write_text(GOOD.replace('category = "shop"', 'category = "shop"\nowner = "shop team"'), encoding="utf-8")
        app._check_catalog_file()
        await settle(app, pilot)
        assert "track_order" not in app.router.catalog
        warned = [n for n in notifications(app) if "unknown field 'owner'" in n]
        assert warned == [f"{catalog}:16: tools[1] (id 'order_food'): unknown field 'owner'"]
        app.action_reload_catalog()  # the palette's "catalog: reload": the same catalog, not said again
        await settle(app, pilot)
        assert len([n for n in notifications(app) if "unknown field 'owner'" in n]) == 1
        saved = tomllib.loads(Path(app.session.path).read_text(encoding="utf-8"))
        assert [t["message"] for t in saved["turns"]] == ["book a bath for my dog", "order kibble for my cat"]  # no turn lost


def test_load_catalog_error_lines_come_from_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '# a comment\nname = "x"\nnone_option = "None Fits"\n\n[[tools]]\nid = "a"\nwhen_to_use = "A."\n')
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    assert caught.value.lines() == [f"{path}:3: none_option 'None Fits' is not a valid option id (e.g. 'none_fits')"]


def test_a_misspelt_table_name_points_at_its_header(tmp_path: Path) -> None:
    path = write(tmp_path, 'name = "x"\n[[tool]]\nid = "a"\nwhen_to_use = "A."\n')
    with pytest.raises(CatalogError) as caught:
        load_catalog(path)
    assert caught.value.lines() == [
        f"{path}:2: unknown top-level key 'tool' (did you mean 'tools'?)",
        f"{path}: the catalog has no tools (add [[tools]] tables)",
    ]


async def test_a_console_started_on_a_broken_catalog_loads_it_once_fixed(tmp_path: Path) -> None:
    catalog = write(tmp_path, GOOD.replace('when_to_use = "Order pet food', 'when_to_use = "Order pet food\n'))
    config = config_from_dict({"catalog": str(catalog), "backend": "local", "sessions_dir": str(tmp_path / "sessions")}, tmp_path / "tui-router.toml")
    app = make_app(config)
    async with app.run_test(size=(120, 40)) as pilot:
        with contextlib.suppress(WorkerFailed):
            await app.workers.wait_for_complete()
        await settle(app, pilot)
        assert app.router is None
        assert any(n.startswith(f"{catalog}:14: not valid TOML: Illegal character") for n in notifications(app)), notifications(app)
        catalog.write_text(GOOD, encoding="utf-8")  # fixed in the editor and saved
        app._check_catalog_file()
        await settle(app, pilot)
        assert app.router is not None and "order_food" in app.router.catalog
        await submit(app, pilot, "order some kibble")
        assert app.session.turns[0].decision is not None and app.session.turns[0].decision.band != "unresolved"


def test_mcp_serve_says_a_catalogs_ignored_fields_before_it_is_ready(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    path = write(tmp_path, GOOD.replace('risk = "payment"', 'risk = "payment"\nowner = "shop team"'))
    argv = [sys.executable, "-m", "tui_router", "mcp-serve", "--catalog", str(path), "--backend", "local", "--no-record"]
    done = subprocess.run(argv, input="", capture_output=True, text=True, env={**os.environ, **env(tmp_path)}, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"tui-router: warning: {path}:17: tools[1] (id 'order_food'): unknown field 'owner'"
    assert "MCP server ready" in lines[1]
