"""Eval metrics as mergeable state: one accumulator per metric, merge = add.

A shard of turns folds its scored turns (TurnResult) into an EvalState; the states of disjoint
shards merge by adding; the report (EvalReport) is computed from the merged state only. So a run
cut into any shards reports what one run over all the turns reports, bit for bit:

- counts and hit/total pairs are integers;
- sums of floats (confidence per reliability bin, the Brier terms, latency) are kept exactly
  (ExactSum: an integer in units of 2**-1074, the smallest double), so their order does not matter;
- latency percentiles come from a log histogram (0.1% wide buckets), the one latency figure that
  is wall-clock time and so never the same in two runs anyway;
- the lists (the first wrong turns, the first unresolved turn) are ordered by the turn's position
  in the run, with the position as the tie-break.

A metric is one entry of a spec table (GROUP_RATIOS, REPORT_RATIOS: name, which turns count, which
are hits) or one accumulator field below; adding one touches that table and the report's JSON.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .policy import Action, Band

if TYPE_CHECKING:
    from .catalog import Catalog
    from .evaluate import EvalReport, TurnResult

RECALL_KS = tuple(range(1, 11))
RELIABILITY_BINS = 10
STAGES = ("retrieval", "unresolved", "decision", "policy")
_UNITS = 1074  # 2**-1074 is the smallest positive double: every double is an integer number of these
_LOG_STEP = math.log1p(1e-3)  # latency histogram: buckets 0.1% wide

Check = Callable[["TurnResult", str], bool]  # (scored turn, none option) -> bool


# (name, counted, hit): over the turns of a group (all, one tag, one label category)
GROUP_RATIOS: tuple[tuple[str, Check, Check], ...] = (
    ("retrieval_recall", lambda r, none: True, lambda r, none: r.retrieved),
    ("top1", lambda r, none: not r.is_none, lambda r, none: r.exact),
    ("top1_acceptable", lambda r, none: not r.is_none, lambda r, none: r.correct),
    ("top3", lambda r, none: not r.is_none, lambda r, none: r.label in r.top3),
    ("accuracy_given_retrieved", lambda r, none: not r.is_none and r.retrieved, lambda r, none: r.correct),
    ("none_precision", lambda r, none: r.choice == none, lambda r, none: r.is_none),
    ("none_recall", lambda r, none: r.is_none, lambda r, none: r.choice == none),
    ("fallback_rate", lambda r, none: True, lambda r, none: r.action == Action.fallback.value),
)

# (name, counted, hit): over every scored turn of the run
REPORT_RATIOS: tuple[tuple[str, Check, Check], ...] = (
    # a review-labelled turn is missed unless the escalation option was chosen AND escalated
    ("missed_review_rate", lambda r, none: r.is_escalation, lambda r, none: not (r.correct and r.action == Action.escalate.value)),
    (
        "wrong_execute_rate",
        lambda r, none: True,
        lambda r, none: r.action == Action.execute.value and r.band == "high" and not r.correct,
    ),
    ("execute_precision", lambda r, none: r.action == Action.execute.value, lambda r, none: r.correct),
    ("automation_rate", lambda r, none: True, lambda r, none: r.action == Action.execute.value),
    *(
        (f"recall@{k}", (lambda r, none: True), (lambda r, none, k=k: r.rank is not None and r.rank <= k))
        for k in RECALL_KS
    ),
)


class ExactSum:
    """The exact sum of doubles (an integer count of 2**-1074), rounded once when read: any order
    of adding, and any split into parts added together, gives the same value."""

    __slots__ = ("units",)

    def __init__(self, units: int = 0) -> None:
        self.units = units

    def add(self, value: float) -> None:
        numerator, denominator = float(value).as_integer_ratio()
        self.units += numerator << (_UNITS - (denominator.bit_length() - 1))

    def merge(self, other: ExactSum) -> None:
        self.units += other.units

    @property
    def value(self) -> float:
        return self.units / (1 << _UNITS)  # int / int is correctly rounded

    def to_json(self) -> str:
        return str(self.units)

    @classmethod
    def from_json(cls, text: str) -> ExactSum:
        return cls(int(text))


def _add_counts(mine: dict[str, list[int]], theirs: dict[str, list[int]]) -> None:
    for name, (hits, total) in theirs.items():
        pair = mine.setdefault(name, [0, 0])
        pair[0] += hits
        pair[1] += total


def _count(ratios: dict[str, list[int]], specs: Iterable[tuple[str, Check, Check]], r: TurnResult, none: str) -> None:
    for name, counted, hit in specs:
        if counted(r, none):
            pair = ratios[name]
            pair[0] += bool(hit(r, none))
            pair[1] += 1


@dataclass
class GroupState:
    """The group table's accumulators: counts, the GROUP_RATIOS pairs, the error stages."""

    n: int = 0
    tool_cases: int = 0
    none_cases: int = 0
    unresolved: int = 0
    ratios: dict[str, list[int]] = field(default_factory=lambda: {name: [0, 0] for name, _, _ in GROUP_RATIOS})
    stages: dict[str, int] = field(default_factory=lambda: {s: 0 for s in STAGES})

    def add(self, r: TurnResult, none: str) -> None:
        self.n += 1
        self.tool_cases += not r.is_none
        self.none_cases += r.is_none
        self.unresolved += r.band == Band.unresolved.value
        if r.stage:
            self.stages[r.stage] += 1
        _count(self.ratios, GROUP_RATIOS, r, none)

    def merge(self, other: GroupState) -> None:
        self.n += other.n
        self.tool_cases += other.tool_cases
        self.none_cases += other.none_cases
        self.unresolved += other.unresolved
        _add_counts(self.ratios, other.ratios)
        for stage, k in other.stages.items():
            self.stages[stage] = self.stages.get(stage, 0) + k

    def metrics(self):
        from .evaluate import GroupMetrics, Ratio

        ratio = {name: Ratio(hits=h, total=t) for name, (h, t) in self.ratios.items()}
        return GroupMetrics(
            n=self.n, tool_cases=self.tool_cases, none_cases=self.none_cases, unresolved=self.unresolved, stages=dict(self.stages), **ratio
        )

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "tool_cases": self.tool_cases, "none_cases": self.none_cases, "unresolved": self.unresolved,
                "ratios": self.ratios, "stages": self.stages}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GroupState:
        return cls(data["n"], data["tool_cases"], data["none_cases"], data["unresolved"],
                   {k: list(v) for k, v in data["ratios"].items()}, dict(data["stages"]))


@dataclass
class LatencyHistogram:
    """Latencies in 0.1%-wide log buckets (count per bucket), their exact sum and count."""

    buckets: dict[int, int] = field(default_factory=dict)
    total: ExactSum = field(default_factory=ExactSum)
    n: int = 0

    @staticmethod
    def bucket(ms: float) -> int:
        return -(10**6) if ms <= 0 else math.floor(math.log(ms) / _LOG_STEP)

    @staticmethod
    def centre(bucket: int) -> float:
        return 0.0 if bucket == -(10**6) else math.exp((bucket + 0.5) * _LOG_STEP)

    def add(self, ms: float) -> None:
        b = self.bucket(ms)
        self.buckets[b] = self.buckets.get(b, 0) + 1
        self.total.add(ms)
        self.n += 1

    def merge(self, other: LatencyHistogram) -> None:
        for b, k in other.buckets.items():
            self.buckets[b] = self.buckets.get(b, 0) + k
        self.total.merge(other.total)
        self.n += other.n

    def percentile(self, q: float) -> float | None:
        """As evaluate.percentile (linear between the two nearest ranks), over bucket centres."""
        if not self.n:
            return None
        pos = (self.n - 1) * q / 100.0
        lo = math.floor(pos)
        hi = min(lo + 1, self.n - 1)
        return self._at(lo) + (self._at(hi) - self._at(lo)) * (pos - lo)

    def _at(self, rank: int) -> float:
        seen = 0
        for b in sorted(self.buckets):
            seen += self.buckets[b]
            if rank < seen:
                return self.centre(b)
        raise IndexError(rank)

    def to_json(self) -> dict[str, Any]:
        return {"buckets": {str(b): k for b, k in self.buckets.items()}, "total": self.total.to_json(), "n": self.n}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LatencyHistogram:
        return cls({int(b): k for b, k in data["buckets"].items()}, ExactSum.from_json(data["total"]), data["n"])


@dataclass
class ContextSizes:
    """The catalog's schema sizes the context-bytes metric adds per turn (evaluate.context_bytes)."""

    one: dict[str, int]
    all_schemas: int
    snippets: int
    tools: int
    tools_with_schema: int
    none_option: str

    @classmethod
    def of(cls, catalog: Catalog) -> ContextSizes:
        from .evaluate import _compact_len

        tools = list(catalog.tools)
        entry = {t.id: {"name": t.id, "schema": t.input_schema or {}} for t in tools}
        return cls(
            one={tid: _compact_len(e) for tid, e in entry.items()},
            all_schemas=_compact_len(list(entry.values())),
            snippets=_compact_len([{"name": t.id, "snippet": t.when_to_use} for t in tools]),
            tools=len(tools),
            tools_with_schema=sum(1 for t in tools if t.input_schema),
            none_option=catalog.none_option,
        )

    def extra(self, r: TurnResult, k: int) -> int:
        """Bytes loaded beyond the snippets: nothing for a none choice, every schema when unresolved."""
        if r.band == Band.unresolved.value:
            return self.all_schemas
        if r.choice is None or r.choice == self.none_option:
            return 0
        return sum(self.one.get(t, 0) for t in r.top3[:k])


@dataclass
class EvalState:
    """Everything an eval report is computed from; `add` one scored turn, `merge` another shard's."""

    keep_errors: int = 10  # how many of the first wrong turns are kept (the CLI's --errors)
    overall: GroupState = field(default_factory=GroupState)
    per_tag: dict[str, GroupState] = field(default_factory=dict)
    per_category: dict[str, GroupState] = field(default_factory=dict)
    ratios: dict[str, list[int]] = field(default_factory=lambda: {name: [0, 0] for name, _, _ in REPORT_RATIOS})
    band_counts: dict[str, list[int]] = field(default_factory=lambda: {b.value: [0, 0] for b in Band})  # correct, members
    # reliability: per bin [count, hits] and the exact confidence sum; Brier's exact sum of squares
    bins: list[list[int]] = field(default_factory=lambda: [[0, 0] for _ in range(RELIABILITY_BINS)])
    bin_confidence: list[ExactSum] = field(default_factory=lambda: [ExactSum() for _ in range(RELIABILITY_BINS)])
    brier: ExactSum = field(default_factory=ExactSum)
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    context_top1: int = 0
    context_top3: int = 0
    arguments: dict[str, list[int]] = field(default_factory=lambda: {"validity": [0, 0], "match": [0, 0]})
    per_tool_arguments: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    not_this: list[int] = field(default_factory=lambda: [0, 0])  # repeats, turns with declined options
    # (position in the run, turn) of the first wrong turns and of the first unresolved one
    first_errors: list[tuple[int, TurnResult]] = field(default_factory=list)
    first_unresolved: tuple[int, TurnResult] | None = None

    def add(self, r: TurnResult, position: int, sizes: ContextSizes) -> None:
        none = sizes.none_option
        self.overall.add(r, none)
        for tag in dict.fromkeys(r.tags):
            self.per_tag.setdefault(tag, GroupState()).add(r, none)
        self.per_category.setdefault(r.category, GroupState()).add(r, none)
        _count(self.ratios, REPORT_RATIOS, r, none)
        members = self.band_counts.setdefault(r.band, [0, 0])
        members[0] += r.correct
        members[1] += 1
        if r.confidence is not None:
            i = min(int(r.confidence * RELIABILITY_BINS), RELIABILITY_BINS - 1)
            hit = 1.0 if r.correct else 0.0
            self.bins[i][0] += 1
            self.bins[i][1] += r.correct
            self.bin_confidence[i].add(r.confidence)
            self.brier.add((r.confidence - hit) ** 2)
        self.latency.add(r.latency_ms)
        self.context_top1 += sizes.extra(r, 1)
        self.context_top3 += sizes.extra(r, 3)
        if r.arguments_valid is not None:
            self._arguments(self.arguments, r)
            if r.choice:
                self._arguments(self.per_tool_arguments.setdefault(r.choice, {"validity": [0, 0], "match": [0, 0]}), r)
        elif r.arguments_match is not None:
            self.arguments["match"][0] += r.arguments_match
            self.arguments["match"][1] += 1
        if r.stage and len(self.first_errors) < self.keep_errors:
            self.first_errors.append((position, r))
        if r.band == Band.unresolved.value and (self.first_unresolved is None or position < self.first_unresolved[0]):
            self.first_unresolved = (position, r)

    @staticmethod
    def _arguments(counts: dict[str, list[int]], r: TurnResult) -> None:
        counts["validity"][0] += bool(r.arguments_valid)
        counts["validity"][1] += 1
        if r.arguments_match is not None:
            counts["match"][0] += r.arguments_match
            counts["match"][1] += 1

    def add_not_this(self, repeated: bool) -> None:
        self.not_this[0] += repeated
        self.not_this[1] += 1

    def merge(self, other: EvalState) -> EvalState:
        self.overall.merge(other.overall)
        for mine, theirs in ((self.per_tag, other.per_tag), (self.per_category, other.per_category)):
            for key, group in theirs.items():
                mine.setdefault(key, GroupState()).merge(group)
        _add_counts(self.ratios, other.ratios)
        _add_counts(self.band_counts, other.band_counts)
        for i in range(RELIABILITY_BINS):
            self.bins[i][0] += other.bins[i][0]
            self.bins[i][1] += other.bins[i][1]
            self.bin_confidence[i].merge(other.bin_confidence[i])
        self.brier.merge(other.brier)
        self.latency.merge(other.latency)
        self.context_top1 += other.context_top1
        self.context_top3 += other.context_top3
        _add_counts(self.arguments, other.arguments)
        for tool, counts in other.per_tool_arguments.items():
            _add_counts(self.per_tool_arguments.setdefault(tool, {"validity": [0, 0], "match": [0, 0]}), counts)
        self.not_this[0] += other.not_this[0]
        self.not_this[1] += other.not_this[1]
        self.first_errors = sorted([*self.first_errors, *other.first_errors], key=lambda pr: pr[0])[: self.keep_errors]
        candidates = [u for u in (self.first_unresolved, other.first_unresolved) if u is not None]
        self.first_unresolved = min(candidates, key=lambda pr: pr[0]) if candidates else None
        return self

    # -- the report ------------------------------------------------------------------------------
    def reliability(self):
        """The 10-bin table, ECE and Brier (None with no resolved turn), from the exact sums."""
        from .evaluate import ReliabilityBin

        scored = sum(count for count, _ in self.bins)
        table = []
        ece = 0.0
        for i, (count, hits) in enumerate(self.bins):
            mean_conf = self.bin_confidence[i].value / count if count else None
            accuracy = hits / count if count else None
            if count:
                ece += count / scored * abs(accuracy - mean_conf)  # type: ignore[operator]
            table.append(
                ReliabilityBin(
                    low=i / RELIABILITY_BINS, high=(i + 1) / RELIABILITY_BINS, count=count, mean_confidence=mean_conf, accuracy=accuracy
                )
            )
        if not scored:
            return table, None, None
        return table, ece, self.brier.value / scored

    def context_bytes(self, sizes: ContextSizes):
        from .evaluate import ContextBytes

        n = self.overall.n
        if not n:
            return None
        return ContextBytes(
            all_schemas=sizes.all_schemas,
            snippets_only=sizes.snippets,
            snippets_top1=sizes.snippets + self.context_top1 / n,
            snippets_top3=sizes.snippets + self.context_top3 / n,
            tools=sizes.tools,
            tools_with_schema=sizes.tools_with_schema,
        )

    def report(
        self, catalog: Catalog, *, backend: str = "", model: str = "", learning: str = "", files: Iterable[str] = (),
        turns: list[TurnResult] | None = None, sizes: ContextSizes | None = None,
    ) -> EvalReport:
        from .evaluate import ArgumentStats, BandStats, EvalReport, Ratio

        sizes = sizes or ContextSizes.of(catalog)
        n = self.overall.n
        ratio = {name: Ratio(hits=h, total=t) for name, (h, t) in self.ratios.items()}
        table, ece, brier = self.reliability()

        def arguments(counts: dict[str, list[int]]) -> ArgumentStats:
            return ArgumentStats(validity=Ratio(hits=counts["validity"][0], total=counts["validity"][1]),
                                 match=Ratio(hits=counts["match"][0], total=counts["match"][1]))

        return EvalReport(
            backend=backend,
            model=model,
            catalog=catalog.name,
            options=len(catalog.option_ids),
            learning=learning,
            files=list(files),
            n=n,
            tool_cases=self.overall.tool_cases,
            none_cases=self.overall.none_cases,
            overall=self.overall.metrics(),
            recall_at_k={k: ratio[f"recall@{k}"] for k in RECALL_KS},
            missed_review_rate=ratio["missed_review_rate"],
            wrong_execute_rate=ratio["wrong_execute_rate"],
            execute_precision=ratio["execute_precision"],
            automation_rate=ratio["automation_rate"],
            bands={
                band: BandStats(count=members, coverage=members / n if n else None, accuracy=Ratio(hits=correct, total=members))
                for band, (correct, members) in self.band_counts.items()
            },
            reliability=table,
            ece=ece,
            brier=brier,
            latency_ms={
                "p50": self.latency.percentile(50),
                "p95": self.latency.percentile(95),
                "mean": self.latency.total.value / n if n else None,
            },
            context_bytes=self.context_bytes(sizes),
            per_tag={k: g.metrics() for k, g in sorted(self.per_tag.items())},
            per_category={k: g.metrics() for k, g in sorted(self.per_category.items(), key=lambda kv: (kv[0] == "none", kv[0]))},
            turns=turns if turns is not None else [],
            arguments=arguments(self.arguments),
            per_tool_arguments={tool: arguments(c) for tool, c in sorted(self.per_tool_arguments.items())},
            not_this=Ratio(hits=self.not_this[0], total=self.not_this[1]),
            first_errors=[r for _, r in self.first_errors],
            first_unresolved=self.first_unresolved[1] if self.first_unresolved else None,
        )

    # -- on disk and between processes -----------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "keep_errors": self.keep_errors,
            "overall": self.overall.to_json(),
            "per_tag": {k: g.to_json() for k, g in self.per_tag.items()},
            "per_category": {k: g.to_json() for k, g in self.per_category.items()},
            "ratios": self.ratios,
            "band_counts": self.band_counts,
            "bins": self.bins,
            "bin_confidence": [s.to_json() for s in self.bin_confidence],
            "brier": self.brier.to_json(),
            "latency": self.latency.to_json(),
            "context": [self.context_top1, self.context_top3],
            "arguments": self.arguments,
            "per_tool_arguments": self.per_tool_arguments,
            "not_this": self.not_this,
            "first_errors": [[p, r.model_dump(mode="json")] for p, r in self.first_errors],
            "first_unresolved": None if self.first_unresolved is None else [self.first_unresolved[0], self.first_unresolved[1].model_dump(mode="json")],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvalState:
        from .evaluate import TurnResult

        return cls(
            keep_errors=data["keep_errors"],
            overall=GroupState.from_json(data["overall"]),
            per_tag={k: GroupState.from_json(v) for k, v in data["per_tag"].items()},
            per_category={k: GroupState.from_json(v) for k, v in data["per_category"].items()},
            ratios={k: list(v) for k, v in data["ratios"].items()},
            band_counts={k: list(v) for k, v in data["band_counts"].items()},
            bins=[list(b) for b in data["bins"]],
            bin_confidence=[ExactSum.from_json(s) for s in data["bin_confidence"]],
            brier=ExactSum.from_json(data["brier"]),
            latency=LatencyHistogram.from_json(data["latency"]),
            context_top1=data["context"][0],
            context_top3=data["context"][1],
            arguments={k: list(v) for k, v in data["arguments"].items()},
            per_tool_arguments={t: {k: list(v) for k, v in c.items()} for t, c in data["per_tool_arguments"].items()},
            not_this=list(data["not_this"]),
            first_errors=[(p, TurnResult.model_validate(r)) for p, r in data["first_errors"]],
            first_unresolved=None if data["first_unresolved"] is None else (data["first_unresolved"][0], TurnResult.model_validate(data["first_unresolved"][1])),
        )


def state_of(results: Iterable[TurnResult], catalog: Catalog, *, keep_errors: int | None = None, start: int = 0) -> EvalState:
    """The state of scored turns in run order (positions from `start`)."""
    results = list(results)
    sizes = ContextSizes.of(catalog)
    state = EvalState(keep_errors=len(results) if keep_errors is None else keep_errors)
    for i, r in enumerate(results, start):
        state.add(r, i, sizes)
    return state
