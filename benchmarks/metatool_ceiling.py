"""What e5-small features can reach on MetaTool dev with k labels per tool, beside what the decision reaches.

    nice python benchmarks/metatool_ceiling.py [--metatool ../shared/data/metatool] [--k 8] [--folds 5]
        [--seed 12] [--cs 10,100] [--set metatool-dev] [--all] [--lexical]
        (needs scikit-learn: pip install -e '.[bench]')

The folds and label picks are learning_curve.py's (`pick`, the none option at the tools' rate), so
the decision's row matches `learning_curve.py --sets metatool-dev --ks 8 --backends semantic`. For
each fold, every learner is trained on the catalog's own texts (passages, examples, keyword
phrases, the shipped none bank: what the semantic backend's head sees) plus the k picked labels,
and scores the fold's turns jointly: argmax over every tool AND the none option (an acceptable
answer counts). Learners: (a) today's FittedHead, (b) the head with labels balanced and shrunk,
(c) multinomial logistic regression (scikit-learn, class_weight balanced, a C grid), (d) kNN over
labels and catalog texts, (e) the decision itself (SemanticBackend via Router), with --lexical (g)
TF-IDF (words 1-2 and char_wb 3-5) logistic regression over the catalog's raw texts + labels and a
TF-IDF kNN over labels, (h) the e5 logistic regression (c) times each of (g), (f) combinations:
the decision's distribution times a learner's (restricted to the offered options, a weight grid),
and the learner's tool with the decision's none (printed when they gain a point of top-1 and lose
no none recall; --all prints every cell). Also the retrieval recall of the decision's
candidates (is the right tool offered?). Grids are chosen on the same turns: the best cell is a
ceiling, not a held-out figure. Aggregates only, tuned-on sets only.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import learning_curve  # noqa: E402
from learning_curve import known_sets, pick  # noqa: E402

from tui_router.catalog import Catalog, load_catalog  # noqa: E402
from tui_router.config import Config  # noqa: E402
from tui_router.decide import semantic  # noqa: E402
from tui_router.decide.fitted import FittedHead, HeadSettings, head_settings  # noqa: E402
from tui_router.decide.local import normalise_message  # noqa: E402
from tui_router.embed import QUERY, Embedder  # noqa: E402
from tui_router.evaluate import LabelledCase, load_cases, route_all  # noqa: E402
from tui_router.route import Band  # noqa: E402

TUNED_ON = ("metatool-dev", "opsdesk", "lifedesk", "shopdesk", "demo-bench")
BALANCED = HeadSettings(label_power=0.0, none_label_power=0.5, shrink=1.0)
ALPHAS = (0.25, 0.5, 1.0, 2.0, 4.0)


def softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    z = (scores - scores.max(axis=-1, keepdims=True)) / temperature
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def head_probs(head: FittedHead, taught: list[tuple[str, str]], vector_of: dict[str, np.ndarray], test_x: np.ndarray) -> np.ndarray:
    """A head taught the picked labels; its regression scores (about 1 for the class) made a distribution."""
    for label, message in taught:
        head.add_label(label, normalise_message(message), vector_of[message])
    return softmax(np.stack([head.scores(v) for v in test_x]), 0.05)


class Scorer:
    """Top-1 acceptable over tool turns and none recall over none turns, for one variant."""

    def __init__(self) -> None:
        self.right = self.tools = self.none_right = self.nones = 0

    def add(self, choice: str | None, case: LabelledCase, none: str) -> None:
        if case.turn.label == none:
            self.nones += 1
            self.none_right += choice == none
        else:
            self.tools += 1
            self.right += choice in {case.turn.label, *case.turn.acceptable}

    def cells(self) -> tuple[float, float]:
        return self.right / max(self.tools, 1), self.none_right / max(self.nones, 1)


def lexical_learners(text_raw: list[str], text_raw_y: np.ndarray, text_raw_w: np.ndarray, taught: list[tuple[str, str]],
                     label_y: np.ndarray, test: list[LabelledCase], n_classes: int) -> dict[str, np.ndarray]:
    """(g): what the words themselves carry, beside e5. Class probabilities over every class."""
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    out: dict[str, np.ndarray] = {}
    raw_x = [*text_raw, *[m for _, m in taught]]
    raw_y = np.concatenate([text_raw_y, label_y])
    raw_w = np.concatenate([text_raw_w, np.ones(len(label_y))])
    words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True)
    train_x = hstack([words.fit_transform(raw_x), chars.fit_transform(raw_x)]).tocsr()

    def features(texts: list[str]):  # noqa: ANN202 (a scipy sparse matrix)
        return hstack([words.transform(texts), chars.transform(texts)]).tocsr()

    test_x = features([c.turn.message for c in test])
    present = np.unique(raw_y)
    for c_value in (10.0, 100.0):
        model = LogisticRegression(C=c_value, class_weight="balanced", max_iter=300)
        model.fit(train_x, raw_y, sample_weight=raw_w)
        probs = np.zeros((len(test), n_classes))
        probs[:, present] = model.predict_proba(test_x)
        out[f"(g) tfidf logistic C={c_value:g}"] = probs
    if taught:  # kNN over the labels alone (the two blocks are unit vectors: halve the sum)
        sims = (test_x @ features([m for _, m in taught]).T).toarray() / 2.0
        nearest = np.argsort(-sims, axis=1)[:, :10]
        for temperature in (0.05, 0.1):
            vote = np.full((len(test), n_classes), 1e-6)
            for row in range(len(test)):
                for j in nearest[row]:
                    vote[row, label_y[j]] += np.exp((sims[row, j] - 1.0) / temperature)
            out[f"(g) tfidf kNN labels T={temperature:g}"] = vote / vote.sum(axis=1, keepdims=True)
    return out


def load_set(metatool_arg: str, name: str) -> tuple[Catalog, list[LabelledCase]]:
    """A known set's catalog and labelled cases (the MetaTool folder as given, else shared/ beside /work)."""
    metatool = Path(metatool_arg)
    if not metatool.is_dir():
        metatool = Path("/work/shared/data/metatool")
    catalog_path, cases_path, _ = known_sets(metatool)[name]
    cases, _ = load_cases([cases_path])
    return load_catalog(catalog_path), cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metatool", default=str(ROOT.parent.parent / "shared" / "data" / "metatool"))
    parser.add_argument("--set", default="metatool-dev")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--all", action="store_true", help="print every combination, not only those that gain")
    parser.add_argument("--cs", default="10,100", help="logistic regression's C grid")
    parser.add_argument("--lexical", action="store_true", help="also the TF-IDF learners (g) and their products with (c) (h); about 3 more minutes")
    args = parser.parse_args()
    if args.set not in TUNED_ON:
        print(f"error: {args.set}: not a tuned-on set ({', '.join(TUNED_ON)})", file=sys.stderr)
        return 2
    try:
        cs = [float(c) for c in args.cs.split(",")]
    except ValueError:
        print("error: --cs is a comma-separated list of numbers", file=sys.stderr)
        return 2
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print("error: this benchmark needs scikit-learn: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    catalog, cases = load_set(args.metatool, args.set)
    none = catalog.none_option
    started = time.perf_counter()

    # message vectors through the embedding store (on disk: repeated runs embed nothing)
    embedder = Embedder(remember=20000)
    learning_curve._EMBEDDER = embedder  # the decision's routers share it
    config = Config()
    backend = semantic.SemanticBackend(catalog, settings=config.semantic, exemplars=[], retrieval=config.retrieval, embedder=embedder)
    texts = [embedder.cut(c.turn.message) for c in cases]
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    vectors = backend.store.load_or_embed(f"ceiling-{args.set}", digest, QUERY, texts, embedder.embed_known, embedder.dim)
    embedder.remember(QUERY, texts, vectors)
    vector_of = {c.turn.message: v for c, v in zip(cases, vectors, strict=True)}

    # the catalog's texts, as the head's prior sees them (class, vector, relative weight)
    settings = head_settings()
    tools = backend.index.tools
    classes = list(catalog.option_ids)
    assert backend.head.classes == classes  # the heads' score columns are these classes
    position = {c: i for i, c in enumerate(classes)}
    points = [(t.id, v, 1.0) for t, v in zip(tools, backend.index.passages, strict=True)]
    points += [(tools[o].id, v, 1.0) for o, v in zip(backend.index.example_owner.tolist(), backend.index.examples, strict=True)]
    points += [(tools[o].id, v, settings.phrase_weight) for o, v in zip(backend.index.phrase_owner.tolist(), backend.index.phrases, strict=True)]
    points += [(none, v, 1.0) for v in (backend._prototypes if backend._prototypes is not None else [])]
    text_x = np.stack([v for _, v, _ in points]).astype(np.float64)
    text_y = np.asarray([position[c] for c, _, _ in points])
    text_w = np.asarray([w for _, _, w in points])
    text_w = text_w / np.bincount(text_y, weights=text_w, minlength=len(classes))[text_y]  # a class's texts share one unit

    # the catalog's raw texts for the lexical learners: a tool's title and when_to_use, examples and
    # keywords (a tool's texts share one unit of weight, as above)
    raw_items = [(t.id, [f"{t.title or ''} {t.when_to_use}".strip(), *t.examples, *t.keywords]) for t in catalog.tools]
    text_raw = [text for _, items in raw_items for text in items]
    text_raw_y = np.asarray([position[tool] for tool, items in raw_items for _ in items])
    text_raw_w = np.asarray([1.0 / len(items) for _, items in raw_items for _ in items])

    order = list(range(len(cases)))
    random.Random(args.seed).shuffle(order)
    fold_of = {i: n % args.folds for n, i in enumerate(order)}
    scorers: dict[str, Scorer] = {}
    offered_right = offered_tools = 0
    timings: dict[str, float] = {}

    by_fold: dict[tuple[str, int], Scorer] = {}  # is a gain there in every fold, or in one?
    fold = 0

    def score(name: str, choice: str | None, case: LabelledCase) -> None:
        scorers.setdefault(name, Scorer()).add(choice, case, none)
        by_fold.setdefault((name, fold), Scorer()).add(choice, case, none)

    for f in range(args.folds):
        fold = f
        test = [c for i, c in enumerate(cases) if fold_of[i] == f]
        train = [c for i, c in enumerate(cases) if fold_of[i] != f]
        taught = pick(train, args.k, args.seed + f, none, "natural") if args.k else []
        test_x = np.stack([vector_of[c.turn.message] for c in test]).astype(np.float64)
        label_x = np.stack([vector_of[m] for _, m in taught]).astype(np.float64) if taught else np.zeros((0, embedder.dim))
        label_y = np.asarray([position[lab] for lab, _ in taught], dtype=np.int64)

        # (e) the decision, as learning_curve.py routes it
        t0 = time.perf_counter()
        router = learning_curve.make_router(config, catalog, "semantic", cases)
        for lab, message in taught:
            router.backend.add_exemplar(lab, message)
        decisions = route_all(router, [c.turn.message for c in test])
        timings["decision"] = timings.get("decision", 0.0) + time.perf_counter() - t0
        for c, d in zip(test, decisions, strict=True):
            score("(e) decision (semantic backend)", d.choice if d.band is not Band.unresolved else None, c)
            if c.turn.label != none:
                offered_tools += 1
                offered_right += bool({c.turn.label, *c.turn.acceptable} & {x.id for x in d.candidates})

        # each learner's class probabilities over every class, (n_test, n_classes)
        learned: dict[str, np.ndarray] = {}

        t0 = time.perf_counter()
        learned["(a) head, today"] = head_probs(backend._fit_head(), taught, vector_of, test_x)
        semantic_settings = semantic.head_settings
        semantic.head_settings = lambda: BALANCED  # the backend builds its head with these
        try:
            learned["(b) head, balanced+shrunk"] = head_probs(backend._fit_head(), taught, vector_of, test_x)
        finally:
            semantic.head_settings = semantic_settings
        timings["heads"] = timings.get("heads", 0.0) + time.perf_counter() - t0

        # (c) logistic regression: catalog texts (a class's texts share the weight of one label
        # times the mean label count) + labels at weight 1, classes balanced
        from sklearn.linear_model import LogisticRegression

        train_x = np.vstack([text_x, label_x])
        train_y = np.concatenate([text_y, label_y])
        present = np.unique(train_y)
        t0 = time.perf_counter()
        for balanced in (True, False):
            for scale in (1.0, 4.0):
                sample_w = np.concatenate([text_w * scale, np.ones(len(label_y))])
                for c_value in cs:
                    model = LogisticRegression(C=c_value, class_weight="balanced" if balanced else None, max_iter=300)
                    model.fit(train_x, train_y, sample_weight=sample_w)
                    probs = np.zeros((len(test), len(classes)))
                    probs[:, present] = model.predict_proba(test_x)
                    weighting = "balanced" if balanced else "unweighted"
                    learned[f"(c) logistic, C={c_value:g}, {weighting}, texts x{scale:g}"] = probs
        timings["logistic"] = timings.get("logistic", 0.0) + time.perf_counter() - t0

        if args.lexical:
            t0 = time.perf_counter()
            lexical = lexical_learners(text_raw, text_raw_y, text_raw_w, taught, label_y, test, len(classes))
            for lex, lex_probs in lexical.items():
                mix = np.log(learned["(c) logistic, C=10, balanced, texts x1"] + 1e-9) + np.log(lex_probs + 1e-9) if "(c) logistic, C=10, balanced, texts x1" in learned else None
                learned[lex] = lex_probs
                if mix is not None:
                    mix = np.exp(mix - mix.max(axis=1, keepdims=True))
                    learned[f"(h) (c) C=10 balanced x {lex}"] = mix / mix.sum(axis=1, keepdims=True)
            timings["lexical"] = timings.get("lexical", 0.0) + time.perf_counter() - t0

        # (d) kNN over labels + catalog texts: similarity-weighted vote of the nearest 10
        sims = test_x @ train_x.T
        nearest = np.argsort(-sims, axis=1)[:, :10]
        vote = np.zeros((len(test), len(classes)))
        for row in range(len(test)):
            for j in nearest[row]:
                vote[row, train_y[j]] += np.exp((sims[row, j] - 1.0) / 0.02)
        learned["(d) kNN 10, labels + catalog texts"] = vote / vote.sum(axis=1, keepdims=True)

        for name, probs in learned.items():
            for row, c in enumerate(test):
                score(name, classes[int(np.argmax(probs[row]))], c)
                tools_only = probs[row].copy()
                tools_only[position[none]] = -1.0
                if c.turn.label != none:  # a perfect none gate: the learner's best tool on tool turns
                    score(f"{name}, tools only (tool turns)", classes[int(np.argmax(tools_only))], c)
        # (f) combinations with the decision, over the options it offered
        for name, probs in learned.items():
            for row, (c, d) in enumerate(zip(test, decisions, strict=True)):
                options = [o for o in d.options if o in position]
                p_dec = np.asarray([d.probabilities.get(o, 0.0) for o in options])
                p_learn = np.asarray([probs[row, position[o]] for o in options])
                for alpha in ALPHAS:
                    mixed = np.log(p_dec + 1e-9) + alpha * np.log(p_learn + 1e-9)
                    score(f"(f) decision x {name} ^ {alpha:g}", options[int(np.argmax(mixed))], c)
                    # the same product over the offered tools only, the decision's own none
                    tools_at = [i for i, o in enumerate(options) if o != none]
                    tool = options[tools_at[int(np.argmax(mixed[tools_at]))]] if tools_at else none
                    score(f"(f) decision x {name} ^ {alpha:g} for the tool, decision's none", none if d.choice == none else tool, c)
                    # none when the two P(none) together say so
                    p_none = 0.5 * (d.probabilities.get(none, 0.0) + probs[row, position[none]])
                    for t in (0.3, 0.4, 0.5):
                        score(f"(f) decision x {name} ^ {alpha:g} for the tool, none if mean P(none) >= {t:g}", none if p_none >= t else tool, c)
                # the learner's tool (any class but none), the decision's none
                tool_probs = probs[row].copy()
                tool_probs[position[none]] = -1.0
                choice = none if d.choice == none else classes[int(np.argmax(tool_probs))]
                score(f"(f) {name} tool, decision's none", choice, c)
        print(f"fold {f + 1}/{args.folds} ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    print(f"MetaTool-style ceiling on {args.set} (tuned-on), k = {args.k}, {args.folds} folds, seed {args.seed}, "
          f"{len(cases)} turns; retrieval recall of the decision's candidates (tool turns): {offered_right / max(offered_tools, 1):.3f}")
    print("\n| learner | top-1 acc. | none recall |\n| --- | ---: | ---: |")
    base = scorers["(e) decision (semantic backend)"].cells()
    for name, scorer in scorers.items():
        if not args.all and name.startswith("(f)") and (scorer.cells()[0] < base[0] + 0.01 or scorer.cells()[1] < base[1]):
            continue  # the table keeps the combinations that gain a point of top-1 and lose no none recall
        top1, recall = scorer.cells()
        print(f"| {name} | {top1:.3f} | {recall:.3f} |")
    keeps_none = {k: v for k, v in scorers.items() if v.cells()[1] >= base[1] and "tools only" not in k}
    best = max(keeps_none.items(), key=lambda kv: kv[1].cells()[0])
    print(f"\nbest top-1 with none recall not below the decision's: {best[0]} {best[1].cells()[0]:.3f} / none recall {best[1].cells()[1]:.3f}; "
          f"timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()), flush=True)
    for name in ("(e) decision (semantic backend)", best[0]):
        cells = [by_fold[(name, f)].cells() for f in range(args.folds)]
        print(f"per fold, {name}: " + ", ".join(f"{a:.3f} / {b:.2f}" for a, b in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
