"""docs/library.md: its Python example runs as written (a real subprocess) and prints what the doc says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).parent.parent / "docs" / "library.md"


def test_library_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1
    script = tmp_path / "example.py"
    script.write_text(blocks[0], encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TUI_ROUTER_CONFIG"} | {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "choice: lint_code high execute"
    assert lines[1] == 'arguments: {"path": "utils.js"} valid (1 argument, extractor)'
    assert lines[2] == 'tools for the LLM: ["lint_code"]'
    used, total = map(int, re.fullmatch(r"schema bytes: (\d+) of (\d+)", lines[3]).groups())
    assert 0 < used < total / 10  # one schema instead of forty-two
