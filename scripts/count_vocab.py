"""Count the hand-entered vocabulary: words and phrases, regexes, prototype sentences, rules.

    python scripts/count_vocab.py                 # the data files under tui_router/vocab/
    python scripts/count_vocab.py --code f34ea10  # the same lists as literals in the code at a commit
                                                  # (before they moved to data files)
    python scripts/count_vocab.py --json

One entry = one word or phrase of a word list (a group's words each count), one regex, one
prototype sentence, one suffix rule; duplicates inside a list count once. `--code` extracts the
literals the old modules held (the same lists, parsed the way the code parsed them) so the two
counts are comparable.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _dedup(items) -> list:
    return list(dict.fromkeys(items))


def _comma_items(text: str) -> list[str]:
    return _dedup(c.strip() for c in text.replace("\n", ",").split(",") if c.strip())


def _top_level_alternatives(pattern: str) -> list[str]:
    """Split a regex at its top-level '|' (one entry per alternative)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = pattern.index("]", i + 2)
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return parts


def extract_from_code(package_parent: Path) -> dict[str, dict]:
    """The literal lists of the modules before the move (commit f34ea10 and earlier layouts)."""
    sys.path.insert(0, str(package_parent))
    try:
        import tui_router.actions as actions
        import tui_router.decide.semantic as semantic
        import tui_router.injection as injection
        import tui_router.lexicon as lexicon
        import tui_router.textnorm as textnorm
    finally:
        sys.path.pop(0)
    out: dict[str, dict] = {}
    out["actions.tool_verbs"] = {"kind": "words", "groups": {a: _dedup(t.split()) for a, t in actions._TOOL_VERBS.items()}}
    for action, text in actions._MESSAGE_CUES.items():
        out[f"actions.cues_{action}"] = {"kind": "phrases", "entries": _comma_items(text)}
    out["actions.request_openers"] = {"kind": "words", "entries": ["please", "pls", "can you", "could you", "hey", "ok", "okay"]}
    out["actions.negated_send"] = {"kind": "regex", "entries": [actions._NEGATED_SEND.pattern]}
    permitted = actions._PERMITTED.pattern
    verbs = permitted.split(r"(?:")[1].split(r")\s+")[0].split("|")
    selves = permitted.split(r"(?!(?:")[1].split(")")[0].split("|")
    acts = permitted.split(r"(?:to\s+|a\s+)?(?:")[1].split(")(?!")[0].split("|")
    out["actions.permitted"] = {"kind": "words", "groups": {"verbs": verbs, "self": selves, "acts": acts}}
    out["actions.received"] = {"kind": "regex", "entries": _top_level_alternatives(actions._RECEIVED.pattern)}
    out["actions.access_nouns"] = {"kind": "words", "entries": sorted(actions._ACCESS_NOUNS, key="access permission permissions role roles rights collaborator collaborators".split().index)}
    groups: dict[str, list[str]] = {}
    for line in lexicon._GROUPS.strip().splitlines():
        concept, _, words = line.partition(":")
        groups[concept.strip()] = _dedup(w.strip() for w in words.split(",") if w.strip())
    out["lexicon.concepts"] = {"kind": "phrases", "groups": groups}
    out["lexicon.llm_native"] = {"kind": "phrases", "entries": _comma_items(lexicon._LLM_NATIVE)}
    out["injection.patterns"] = {"kind": "regex", "entries": list(injection._PATTERNS)}
    out["textnorm.stopwords"] = {"kind": "words", "entries": sorted(textnorm.STOPWORDS)}
    out["textnorm.suffixes"] = {"kind": "rules", "rules": [list(p) for p in textnorm._SUFFIXES]}
    out["textnorm.unstemmed"] = {"kind": "words", "entries": sorted(textnorm._KEEP)}
    out["semantic.none_prototypes"] = {"kind": "sentences", "entries": list(semantic.NONE_PROTOTYPES)}
    out["semantic.injection_prototypes"] = {"kind": "sentences", "entries": list(semantic.INJECTION_PROTOTYPES)}
    out["semantic.english_words"] = {"kind": "words", "entries": sorted(semantic._ENGLISH)}
    return out


def extract_from_data() -> dict[str, dict]:
    sys.path.insert(0, str(ROOT))
    from tui_router import vocab

    out = {}
    for name, item in vocab.all_lists(ignore_off=True).items():
        out[name] = {"kind": item.kind, "entries": list(item.entries), "groups": {k: list(v) for k, v in item.groups.items()}, "rules": [list(r) for r in item.rules]}
    return out


def size(item: dict) -> int:
    return len(item.get("entries", ())) + sum(len(v) for v in item.get("groups", {}).values()) + len(item.get("rules", ()))


def summary(lists: dict[str, dict]) -> dict:
    per_list = {name: size(item) for name, item in sorted(lists.items())}
    per_kind: dict[str, int] = {}
    for name, item in lists.items():
        per_kind[item["kind"]] = per_kind.get(item["kind"], 0) + per_list[name]
    return {"lists": len(lists), "total": sum(per_list.values()), "per_kind": per_kind, "per_list": per_list}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", metavar="REV", help="count the literals in the code at this git revision")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.code:
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", args.code, "tui_router"], capture_output=True, check=False)
        if tar.returncode:
            print(f"count_vocab: git archive {args.code} failed: {tar.stderr.decode().strip()}", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory() as tmp:
            tarfile.open(fileobj=BytesIO(tar.stdout)).extractall(tmp, filter="data")
            result = summary(extract_from_code(Path(tmp)))
        result["source"] = f"code at {args.code}"
    else:
        result = summary(extract_from_data())
        result["source"] = "tui_router/vocab/*.toml"
    if args.json:
        print(json.dumps(result, indent=1, ensure_ascii=False))
        return 0
    print(f"{result['source']}: {result['total']} entries in {result['lists']} lists")
    print("  by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(result["per_kind"].items())))
    for name, n in result["per_list"].items():
        print(f"  {name:32} {n:5}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
