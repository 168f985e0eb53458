"""Convert Berkeley Function Calling Leaderboard (BFCL) tool-selection data to catalog + cases TOML.

    pip download --no-deps -d /tmp/bfcl bfcl-eval==2026.3.23 && unzip /tmp/bfcl/bfcl_eval-*.whl 'bfcl_eval/data/*' -d /tmp/bfcl
    python benchmarks/convert_bfcl.py --data /tmp/bfcl/bfcl_eval/data --out benchmarks/data/public/bfcl

The raw JSON lines files (BFCL_v4_<category>.json and possible_answer/) ship inside the `bfcl-eval`
wheel on PyPI (Apache-2.0; the same files as berkeley-function-call-leaderboard/data/ in the GitHub
repository ShishirPatil/gorilla). Only data files are read; none of the package's code is run.

Two sets, each one pooled catalog plus dev / held-out cases:

- bfcl-live:  BFCL_v4_live_multiple (real user-contributed queries, each with 2+ candidate functions)
              + BFCL_v4_live_irrelevance (queries none of their own functions serve)
- bfcl-multiple: BFCL_v4_multiple (written by the BFCL authors) + BFCL_v4_irrelevance

Conversion (README.md in the output folder says the same, with counts):

- catalog: every distinct function of the category, deduplicated by (name, description); id = the
  name lower-cased with other characters folded to `_` (cut to 60), `_2`, `_3`, ... when two
  distinct descriptions share a name; title = the original name; when_to_use = the description;
  schema left out (BFCL's parameter types such as "dict" and "float" are not JSON Schema).
- a query's label is the id of its ground-truth function *as its own entry lists it*; the other ids
  of the same original name (near-identical variants from other entries) are `acceptable`.
- irrelevance queries get `defer_to_llm` only when they are lexically disjoint from the whole pooled
  catalog (no content word of four letters or more shared with any function's name or description):
  in a pooled catalog a function from another entry may well serve a query that was irrelevant to its
  own entry, so the rest are dropped (tagged counts in the README).
- the query text is the entry's user message, unedited (any language); a system message is dropped.
- split: sha256("bfcl:" + normalised query) — even first byte: dev, odd: held-out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

import tomli_w

SETS = {"bfcl-live": ("live_multiple", "live_irrelevance"), "bfcl-multiple": ("multiple", "irrelevance")}
STOP = set("""about above after again also among another anything because been before being below between both
could does doing down during each either else every from further have having here into itself just like
make many more most much must need only other over same should some such than that their them then there
these they this those through under until upon very want were what when where which while with within
would your yours please tell give know using used uses based provide provides given specific""".split())


def norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split()).casefold()


def split_of(text: str) -> str:
    return "dev" if hashlib.sha256(("bfcl:" + norm(text)).encode()).digest()[0] % 2 == 0 else "heldout"


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in STOP}


def base_id(name: str) -> str:
    s = re.sub(r"[^a-z0-9_.:-]", "_", name.lower()).strip("_") or "fn"
    if not s[0].isalpha():
        s = "f_" + s
    return s[:60]


def lang_tags(text: str) -> list[str]:
    if re.search(r"[\u3040-\u30ff]", text):
        return ["multilingual", "script:ja"]
    if re.search(r"[\u4e00-\u9fff]", text):
        return ["multilingual", "script:zh"]
    if re.search(r"[\u0400-\u04ff]", text):
        return ["multilingual", "script:cyrillic"]
    if re.search(r"[^\x00-\x7f]", text) and sum(c.isascii() for c in text) < 0.9 * len(text):
        return ["multilingual", "script:other"]
    return []


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def user_text(entry: dict) -> str:
    """The user message(s); "" when nothing in it draws (the eval skips such a turn)."""
    text = "\n".join(m["content"] for m in entry["question"][0] if m["role"] == "user").strip()
    return text if any(unicodedata.category(c)[0] in "LNS" for c in text) else ""


def convert(data: Path, name: str, positive: str, negative: str) -> tuple[dict, dict[str, list[dict]], dict]:
    entries = load(data / f"BFCL_v4_{positive}.json")
    answers = {a["id"]: a for a in load(data / "possible_answer" / f"BFCL_v4_{positive}.json")}
    ids: dict[tuple[str, str], str] = {}
    by_name: dict[str, list[str]] = defaultdict(list)
    taken: set[str] = {"defer_to_llm"}
    tools: list[dict] = []
    for entry in entries:
        for fn in entry["function"]:
            key = (fn["name"], fn.get("description", ""))
            if key in ids:
                continue
            base, n = base_id(fn["name"]), 1
            tool_id = base
            while tool_id in taken:
                n += 1
                tool_id = f"{base}_{n}"
            taken.add(tool_id)
            ids[key] = tool_id
            by_name[fn["name"]].append(tool_id)
            tools.append({"id": tool_id, "title": fn["name"], "when_to_use": key[1] or f"(no description) {fn['name']}"})
    vocab = set()
    for t in tools:
        vocab |= words(t["title"].replace("_", " ").replace(".", " ")) | words(t["when_to_use"])
    stats: Counter = Counter()
    cases: dict[str, list[dict]] = {"dev": [], "heldout": []}
    seen: set[str] = set()
    for entry in entries:
        text = user_text(entry)
        truth = answers[entry["id"]]["ground_truth"]
        called = [next(iter(call)) for call in truth]
        if not text or norm(text) in seen:
            stats["positive dropped (empty or duplicate text)"] += 1
            continue
        own = {fn["name"]: ids[(fn["name"], fn.get("description", ""))] for fn in entry["function"]}
        if called[0] not in own:
            stats["positive dropped (answer not among its functions)"] += 1
            continue
        seen.add(norm(text))
        label = own[called[0]]
        acceptable = [i for i in by_name[called[0]] if i != label] + [own[c] for c in called[1:] if c in own and own[c] != label]
        turn = {"message": text, "label": label}
        if acceptable:
            turn["acceptable"] = sorted(set(acceptable))
        turn["tags"] = [positive, *(["name_variants"] if len(by_name[called[0]]) > 1 else []), *lang_tags(text)]
        turn["_src"] = entry["id"]
        cases[split_of(text)].append(turn)
        stats["positive kept"] += 1
    for entry in load(data / f"BFCL_v4_{negative}.json"):
        text = user_text(entry)
        if not text or norm(text) in seen:
            stats["irrelevance dropped (empty or duplicate text)"] += 1
            continue
        if words(text) & vocab:
            stats["irrelevance dropped (shares a content word with the pooled catalog)"] += 1
            continue
        seen.add(norm(text))
        cases[split_of(text)].append({"message": text, "label": "defer_to_llm", "tags": [negative, "none", *lang_tags(text)], "_src": entry["id"]})
        stats["irrelevance kept (defer_to_llm)"] += 1
    catalog = {"name": name, "description": f"BFCL v4 {positive}: every distinct function, pooled", "none_option": "defer_to_llm", "tools": tools}
    return catalog, cases, dict(stats)


def write_cases(path: Path, name: str, split: str, turns: list[dict]) -> None:
    lines = [f"# {name} {split} cases, converted by benchmarks/convert_bfcl.py from BFCL v4 (Apache-2.0; PyPI bfcl-eval 2026.3.23).",
             "# Public data nobody here wrote. Split by sha256('bfcl:' + normalised query). See README.md.", ""]
    body = {"session": {"id": f"{name}-{split}", "catalog": name}, "turns": []}
    for t in turns:
        body["turns"].append({k: v for k, v in t.items() if k != "_src"} | {"tags": t["tags"] + [f"src:{t['_src']}"]})
    path.write_text("\n".join(lines) + tomli_w.dumps(body), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the bfcl_eval/data folder")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for name, (pos, neg) in SETS.items():
        catalog, cases, stats = convert(Path(args.data), name, pos, neg)
        (out / f"{name}.toml").write_text(f"# {name}: converted by benchmarks/convert_bfcl.py; see README.md.\n\n" + tomli_w.dumps(catalog), encoding="utf-8")
        for split, turns in cases.items():
            write_cases(out / f"{name}-{split}.toml", name, split, turns)
        summary[name] = {"tools": len(catalog["tools"]), **{f"{s} turns": len(t) for s, t in cases.items()},
                         **{f"{s} none": sum(t["label"] == "defer_to_llm" for t in ts) for s, ts in cases.items()},
                         **{f"{s} multilingual": sum("multilingual" in t["tags"] for t in ts) for s, ts in cases.items()}, **stats}
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
