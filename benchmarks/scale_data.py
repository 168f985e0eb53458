"""Big, realistic inputs for the console scale benchmark: a session of months of turns, a folder of
sessions, and large catalogs (benchmarks/synthetic.py). Deterministic (a seed); nothing is committed:
write them under a temporary folder.

    python benchmarks/scale_data.py OUT_DIR [--turns 5000] [--files 50] [--folder-turns 20000] [--tools 1000,10000]

writes OUT_DIR/catalog-N.toml for each N, OUT_DIR/big.toml (one session, --turns turns over the
first catalog) and OUT_DIR/folder/ (--files sessions, --folder-turns turns in all).

The turns are what a team's console writes over months: every band and action, outcomes with a
history (declined then sent to the fallback, re-routed confirms), fallback records with output,
arguments, cautions, labels from every source (about a third labelled), tags, and a share of
hand-written cases with no decision.
"""

from __future__ import annotations

import argparse
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.synthetic import make_catalog  # noqa: E402
from tui_router.catalog import load_catalog  # noqa: E402
from tui_router.session import (  # noqa: E402
    ArgumentsRecord,
    FallbackRecord,
    OutcomeStep,
    Session,
    SessionInfo,
    Turn,
    TurnDecision,
    dumps_session,
)

OPENERS = ["Please", "Can you", "Could you", "I need to", "Quickly", "Hey, ", "Urgent:", ""]
TAILS = ["", " asap", " before the standup", " for the Q3 review", " — thanks!", " (see ticket #4821)", " by Friday"]
CHATTER = ["Write a haiku about rain", "What's the capital of Peru?", "Tell me a joke about Kubernetes", "Summarise this paragraph for me"]
TAGS = ["paraphrase", "distractor", "typo", "multilingual", "escalation", "none", "regression"]


def _message(rng: random.Random, tool: dict | None) -> str:
    if tool is None:
        return rng.choice(CHATTER) + rng.choice(TAILS)
    text = tool.get("examples", [None])[0] if tool.get("examples") and rng.random() < 0.3 else tool["when_to_use"].rstrip(".")
    text = f"{rng.choice(OPENERS)} {text[0].lower()}{text[1:]}".strip() + rng.choice(TAILS)
    if rng.random() < 0.05:
        text = text * rng.randint(2, 6)  # a pasted log line or a long ramble
    return text


def make_turns(n: int, tools: list[dict], none_option: str, rng: random.Random, start: datetime) -> list[Turn]:
    ids = [t["id"] for t in tools]
    escalation = [t["id"] for t in tools if t.get("risk") == "escalation"] or ["human_review"]
    turns: list[Turn] = []
    at = start
    for _ in range(n):
        at += timedelta(seconds=rng.randint(5, 3600))
        stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        kind = rng.random()
        tool = None if kind < 0.1 else rng.choice(tools)
        turn = Turn(message=_message(rng, tool), at=stamp)
        if rng.random() < 0.15:
            turn.tags = rng.sample(TAGS, rng.randint(1, 2))
        if rng.random() < 0.04:  # a hand-written eval case: no decision
            turn.label = tool["id"] if tool else none_option
            turns.append(turn)
            continue
        candidates = rng.sample(ids, 5)
        if tool is not None and rng.random() < 0.85 and tool["id"] not in candidates:
            candidates[0] = tool["id"]
        options = candidates + [none_option]
        weights = [rng.random() ** 3 for _ in options]
        if rng.random() < 0.6:
            weights[rng.randrange(len(options))] += rng.uniform(1, 6)
        total = sum(weights)
        probs = {o: round(w / total, 6) for o, w in zip(options, weights, strict=True)}
        choice = max(probs, key=lambda o: probs[o])
        top = probs[choice]
        confidence = round((top - 1 / len(options)) / (1 - 1 / len(options)), 6)
        roll = rng.random()
        if roll < 0.03:
            d = TurnDecision(band="unresolved", action="fallback", outcome="pending", error="HTTP 503: the server is overloaded (gave up after 3 attempts)", backend="systemone", high=0.75, medium=0.45)
        else:
            band = "high" if confidence >= 0.75 else "medium" if confidence >= 0.45 else "low"
            action = {"high": "execute", "medium": "confirm", "low": "fallback"}[band]
            if choice == none_option:
                action = "fallback"
            elif choice in escalation:
                action = "escalate"
            outcome = {"execute": "proposed", "confirm": "pending", "fallback": "pending", "escalate": "escalated"}[action]
            d = TurnDecision(
                candidates=candidates, scores={c: round(rng.uniform(2, 14), 4) for c in candidates}, choice=choice,
                probabilities=probs, confidence=confidence, band=band, action=action, outcome=outcome,
                latency_ms=round(rng.uniform(0.5, 90), 2), model="semantic-e5-small-fit", backend="semantic",
                retrieval="hybrid", high=0.75, medium=0.45,
            )
            if rng.random() < 0.05:
                d.caution = "the message claims an authority it may not have"
        turn.decision = d
        # outcomes with a history
        o = rng.random()
        if d.action == "confirm" and o < 0.5:
            d.outcome = "approved"
        elif d.action == "confirm" and o < 0.65:
            d.history.append(OutcomeStep(outcome="pending"))
            d.outcome, d.rerouted_to = "rerouted", rng.choice(ids)
        elif d.action in ("confirm", "execute") and o < 0.75:
            d.history.append(OutcomeStep(outcome="declined"))
            d.outcome = "fallback_done"
            turn.not_this = [d.choice] if d.choice else []
        if d.action == "fallback" and rng.random() < 0.5 and d.outcome == "pending":
            d.outcome = "fallback_done"
        if d.outcome == "fallback_done":
            turn.fallback = FallbackRecord(
                command=["llm", "-m", "local"], exit_code=0, output=f"Here is what I found about {turn.message[:40]}…\n" * rng.randint(1, 8),
                duration_ms=round(rng.uniform(200, 9000), 1), at=stamp,
            )
        if d.action in ("execute", "confirm") and d.choice and rng.random() < 0.5:
            turn.arguments = ArgumentsRecord(tool=d.choice, values={"id": str(rng.randint(1000, 9999))}, valid=True, duration_ms=0.4, at=stamp)
        # labels: about a third, from every source
        lr = rng.random()
        if lr < 0.12:
            turn.label, turn.label_source, turn.reviewer = (tool["id"] if tool else none_option), "hand", "dana"
        elif lr < 0.22:
            turn.label, turn.label_source, turn.reviewer = (tool["id"] if tool else none_option), "review", "sam"
        elif lr < 0.32 and d.outcome in ("approved", "rerouted"):
            turn.label, turn.label_source, turn.reviewer = d.rerouted_to or d.choice, "confirm", "dana"
        turns.append(turn)
    return turns


def make_session(path: Path, catalog_path: Path, turns: int, seed: int = 11, session_id: str | None = None) -> Path:
    rng = random.Random(seed)
    catalog = load_catalog(str(catalog_path))
    tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in catalog.tools]
    start = datetime(2026, 6, 1, tzinfo=UTC) + timedelta(days=seed % 30)
    session = Session(
        session=SessionInfo(id=session_id or path.stem, catalog=catalog.name, created=start.strftime("%Y-%m-%dT%H:%M:%SZ"), backend="semantic"),
        turns=make_turns(turns, tools, catalog.none_option, rng, start),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_session(session), encoding="utf-8")
    return path


def make_folder(folder: Path, catalog_path: Path, files: int, turns: int, seed: int = 23) -> Path:
    per = turns // files
    for i in range(files):
        make_session(folder / f"2026-{6 + i // 10:02d}-{1 + i % 28:02d}-ops-{i:02d}.toml", catalog_path, per + (1 if i < turns % files else 0), seed=seed + i)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--folder-turns", type=int, default=20000)
    parser.add_argument("--tools", default="1000,10000")
    args = parser.parse_args()
    sizes = [int(n) for n in args.tools.split(",")]
    catalogs = [make_catalog(n, args.out / f"catalog-{n}.toml") for n in sizes]
    args.out.mkdir(parents=True, exist_ok=True)
    make_session(args.out / "big.toml", catalogs[0], args.turns)
    make_folder(args.out / "folder", catalogs[0], args.files, args.folder_turns)
    print(f"wrote {', '.join(str(c) for c in catalogs)}, {args.out / 'big.toml'} and {args.out / 'folder'}")


if __name__ == "__main__":
    main()
