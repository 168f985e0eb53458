"""Route time of the semantic backend for long messages: 100 / 5,000 / 50,000 characters.

    nice python benchmarks/bench_long_message.py [--runs 7] [--lengths 100,5000,50000]

Each message is a request at the start ("Text Jordan that the deploy finished.") followed by pasted
prose that names no tool (a meeting summary, words drawn with a fixed seed), the shape of a user
pasting a document under a one-line ask. Every run routes a different message (another seed), so
neither the embedding memo nor the retrieval cache answers for it: the figure is a first route.
Prints the median and the spread of `Router.route` on the bundled demo catalog (no labelled turns,
so nothing tuned on a case), and the tool chosen, which should be send_sms at every length.
The machine has 2 shared cores: quote medians with the command and the machine's load.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REQUEST = "Text Jordan that the deploy finished."
PROSE = (
    "Minutes of the quarterly planning meeting held on the third floor with the regional leads present "
    "The group went over last quarter's figures and agreed that the northern stores had a slower spring "
    "than expected mostly because of the weather and the late arrival of the summer range "
    "Several people asked whether the loyalty scheme should be simplified since customers found the tiers "
    "confusing and the staff spent too long explaining them at the till "
    "It was noted that the new coffee machines in the break rooms were popular and that parking near the "
    "warehouse remains a problem on market days "
    "Everyone thanked Priya for organising the summer picnic and the charity run raised more than last year"
).split()


def padded(length: int, seed: int) -> str:
    """REQUEST then prose up to `length` characters (REQUEST alone when it is longer)."""
    rng = random.Random(seed)
    parts = [REQUEST]
    size = len(REQUEST)
    while size < length:
        word = rng.choice(PROSE)
        parts.append(word)
        size += len(word) + 1
    return " ".join(parts)[: max(length, len(REQUEST))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="routes per length, each a fresh message (default 7)")
    parser.add_argument("--lengths", default="100,5000,50000", help="message lengths in characters")
    args = parser.parse_args()

    from tui_router.config import config_from_dict
    from tui_router.route import build_router

    router = build_router(config_from_dict({"backend": "semantic", "catalog": "demo"}))
    router.route("warm up: load the model and the catalog's vectors")
    # the engine's share, timed around the embedder's one entry point: it reads at most
    # [semantic] max_chars (2,000) of a message, so above that its cost stays put
    embedder = router.backend.embedder
    embed, spent = embedder.embed, [0.0]

    def timed_embed(*a, **k):
        started = time.perf_counter()
        try:
            return embed(*a, **k)
        finally:
            spent[0] += time.perf_counter() - started

    embedder.embed = timed_embed
    print(f"semantic backend ({router.backend.model}), catalog demo, {args.runs} fresh messages per length")
    for length in (int(n) for n in args.lengths.split(",")):
        times, rest, choices = [], [], set()
        for run in range(args.runs):
            message = padded(length, seed=1000 * length + run)
            spent[0] = 0.0
            started = time.perf_counter()
            decision = router.route(message)
            times.append((time.perf_counter() - started) * 1000)
            rest.append(times[-1] - spent[0] * 1000)
            choices.add(f"{decision.choice} ({decision.band.value})")
        print(
            f"  {length:>6} chars: median {statistics.median(times):7.1f} ms, of which outside the embedding "
            f"{statistics.median(rest):6.1f} ms (route min {min(times):.1f}, max {max(times):.1f}); "
            f"chose {', '.join(sorted(choices))}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
