"""Mutation testing (mutmut) over the rules that guard users; ends with `N killed, N survived`.

    pip install -e '.[test,mutation]'
    nice python scripts/mutation.py                 # every target
    nice python scripts/mutation.py policy fallback # some targets
    python scripts/mutation.py --list               # the targets and their test commands

Each target is a set of functions and the few test files that guard them (its scoped test command).
It runs in a scratch copy of the working tree (mutmut writes `mutants/` and rewrites imports there),
one copy per target so the test selection really is that target's. mutmut forks once per mutant
and runs only the tests of the selection that cover the mutated function. A timeout counts as
killed (the mutant made a test hang past 15x its normal time); a mutant no selected test reaches
("no tests") counts as survived. Survivors are printed as diffs: each one is listed in
docs/testing.md with why it is harmless or which test now kills it.

Not part of .ci/run: about 35 minutes on the shared 2-core machine (docs/testing.md has the result).
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    name: str
    what: str
    files: tuple[str, ...]
    mutants: tuple[str, ...]  # mutmut names (globs): `module.x_function` / `module.xǁClassǁmethod`
    tests: tuple[str, ...]


TARGETS = (
    Target(
        "policy",
        "bands, risk policy, confidence formulas, per-risk thresholds",
        ("tui_router/policy.py", "tui_router/confidence.py", "tui_router/config.py"),
        ("tui_router.policy.*", "tui_router.confidence.*", "tui_router.config.xǁPolicyConfigǁthresholds_for__mutmut_*"),
        ("tests/test_policy.py", "tests/test_config.py"),
    ),
    Target(
        "answers",
        "answer checks every backend's answer passes (check_answer)",
        ("tui_router/decide/base.py",),
        ("tui_router.decide.base.x_check_answer__mutmut_*",),
        ("tests/test_policy.py", "tests/test_systemone_unit.py"),
    ),
    Target(
        "session",
        "session writing: atomic write, save, never overwrite a taken name; the console's file (workspace.py)",
        ("tui_router/session.py", "tui_router/workspace.py"),
        (
            "tui_router.session.x_atomic_write_text__mutmut_*",
            "tui_router.session.x_save_session__mutmut_*",
            "tui_router.session.x_unused_path__mutmut_*",
            *(
                f"tui_router.workspace.xǁWorkspaceǁ{method}__mutmut_*"
                for method in ("_changed", "_turn_toml", "ensure_path", "snapshot", "write", "save_now", "save_as_target", "save_as")
            ),
        ),
        ("tests/test_session.py", "tests/test_workspace.py"),
    ),
    Target(
        "storage",
        "session file locking: one writer, exclusive create, no write over a file changed on disk",
        ("tui_router/storage.py",),
        ("tui_router.storage.*",),
        ("tests/test_storage.py",),
    ),
    Target(
        "fallback",
        "the fallback run: message on stdin and in the env (capped), secrets withheld, errors",
        ("tui_router/fallback.py",),
        ("tui_router.fallback.*",),
        ("tests/test_fallback.py",),
    ),
    Target(
        "command",
        "subprocess limits (command.py): timeout, output cap, process group killed, env without secrets",
        ("tui_router/command.py",),
        ("tui_router.command.*",),
        ("tests/test_command.py", "tests/test_fallback.py"),
    ),
)

# mutmut's statuses; a timeout is a detected mutant, "no tests" is an undetected one
KILLED = {"killed", "timeout", "segfault", "caught by type check"}
SURVIVED = {"survived", "no tests", "suspicious"}


def scratch_copy(dest: Path) -> None:
    """The working tree as git sees it (tracked and untracked, ignored files left out)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        rel = raw.decode()
        if rel.startswith(("docs/", "benchmarks/data/")):
            continue
        src = ROOT / rel
        if not src.is_file():
            continue  # deleted in the working tree
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out)


def mutmut_config(target: Target) -> str:
    def toml_list(items: tuple[str, ...]) -> str:
        return "[" + ", ".join(f'"{i}"' for i in items) + "]"

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["tui_router"]\n'
        # the bundled data the package finds beside itself in a checkout
        'also_copy = ["catalogs", "embeddings", "sessions"]\n'
        f"only_mutate = {toml_list(target.files)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(target.tests)}\n"
        'pytest_add_cli_args = ["-q", "-p", "no:cacheprovider"]\n'
    )


def run_target(target: Target, keep: bool) -> tuple[int, int, list[str]]:
    """(killed, survived, survivor diffs) for one target."""
    work = Path(tempfile.mkdtemp(prefix=f"mutation-{target.name}-"))
    try:
        scratch_copy(work)
        with (work / "pyproject.toml").open("a", encoding="utf-8") as handle:
            handle.write(mutmut_config(target))
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        run = subprocess.run(
            [sys.executable, "-m", "mutmut", "run", *target.mutants],
            cwd=work, env=env, capture_output=True, text=True,
        )
        if run.returncode != 0:
            tail = (run.stderr or run.stdout).strip().splitlines()[-15:]
            raise SystemExit(f"mutation: mutmut failed on target {target.name}:\n" + "\n".join(tail))
        listed = subprocess.run(
            [sys.executable, "-m", "mutmut", "results", "--all", "true"],
            cwd=work, env=env, capture_output=True, text=True, check=True,
        ).stdout
        statuses: dict[str, str] = {}
        for line in listed.splitlines():
            match = re.match(r"\s*(\S+__mutmut_\d+): (.+)$", line)
            if match and any(fnmatch.fnmatchcase(match[1], pattern) for pattern in target.mutants):
                statuses[match[1]] = match[2].strip()
        unknown = sorted({s for s in statuses.values()} - KILLED - SURVIVED)
        if unknown:
            raise SystemExit(f"mutation: unexpected mutmut status {unknown} on target {target.name}")
        killed = sum(1 for s in statuses.values() if s in KILLED)
        survivors = sorted((n for n, s in statuses.items() if s in SURVIVED), key=_natural)
        diffs = []
        for name in survivors:
            shown = subprocess.run(
                [sys.executable, "-m", "mutmut", "show", name], cwd=work, env=env, capture_output=True, text=True
            ).stdout
            lines = [ln for ln in shown.splitlines() if ln[:2] in ("- ", "+ ")]
            diffs.append(f"{name} ({statuses[name]})\n" + "\n".join("    " + ln for ln in lines))
        return killed, len(survivors), diffs
    finally:
        if keep:
            print(f"  kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _natural(name: str) -> tuple[str, int]:
    head, _, number = name.rpartition("_")
    return head, int(number) if number.isdigit() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="target names (default: all)")
    parser.add_argument("--list", action="store_true", help="list the targets and their test commands")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies (mutmut browse works there)")
    args = parser.parse_args()

    names = {t.name: t for t in TARGETS}
    if args.list:
        for t in TARGETS:
            print(f"{t.name}: {t.what}\n  mutates {', '.join(t.mutants)}\n  tests: python -m pytest -q {' '.join(t.tests)}")
        return 0
    unknown = [n for n in args.targets if n not in names]
    if unknown:
        print(f"mutation: unknown target {unknown[0]!r} (targets: {', '.join(names)})", file=sys.stderr)
        return 2
    try:
        import mutmut  # noqa: F401
    except ImportError:
        print("mutation: mutmut is not installed; run pip install -e '.[test,mutation]'", file=sys.stderr)
        return 2
    chosen = [names[n] for n in args.targets] if args.targets else list(TARGETS)
    total_killed = total_survived = 0
    for target in chosen:
        print(f"{target.name}: {target.what} (tests: {' '.join(target.tests)})", flush=True)
        killed, survived, diffs = run_target(target, args.keep)
        total_killed += killed
        total_survived += survived
        print(f"  {killed} killed, {survived} survived")
        for diff in diffs:
            print("  survived: " + diff.replace("\n", "\n  "))
    total = total_killed + total_survived
    share = f" ({100 * total_killed / total:.1f}% killed)" if total else ""
    print(f"all targets{share}:")
    print(f"{total_killed} killed, {total_survived} survived")
    return 0


if __name__ == "__main__":
    sys.exit(main())
