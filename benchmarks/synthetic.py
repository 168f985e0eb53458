"""A deterministic synthetic catalog of N tools for scale benchmarks (demo tools + generated ones)."""

from __future__ import annotations

import random
from pathlib import Path

import tomli_w

from tui_router.catalog import load_catalog

VERBS = "create delete update list search export import send archive sync render convert validate merge schedule cancel approve reject summarize translate".split()
OBJECTS = (
    "invoice order customer ticket report dashboard chart backup snapshot bucket queue cluster node pipeline job "
    "contract lease badge visitor parcel shipment route driver vehicle sensor meter alarm campaign coupon voucher "
    "playlist podcast episode recipe menu booking room desk locker asset license certificate domain record"
).split()
SYSTEMS = "salesforce jira zendesk stripe shopify github gitlab slack teams notion airtable hubspot sap oracle workday".split()


def make_catalog(n: int, path: Path, seed: int = 7) -> Path:
    rng = random.Random(seed)
    demo = load_catalog("demo")
    tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in demo.tools]
    i = 0
    while len(tools) < n:
        verb, obj, system = rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(SYSTEMS)
        tools.append(
            {
                "id": f"{system}_{verb}_{obj}_{i}",
                "when_to_use": f"{verb.capitalize()} a {obj} in {system.capitalize()} for team {i % 97}.",
                "category": system,
                "risk": rng.choice(["read", "write", "outbound"]),
                "keywords": [verb, obj, system],
                "schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
            }
        )
        i += 1
    path.write_text(tomli_w.dumps({"name": f"synthetic-{n}", "none_option": "defer_to_llm", "tools": tools}), encoding="utf-8")
    return path
