"""Configuration: TOML validated by pydantic; every default runs with no file at all.

Lookup order: --config, then $TUI_ROUTER_CONFIG, then ./tui-router.toml, then the user config
folder (platformdirs: $XDG_CONFIG_HOME/tui-router/config.toml on Linux). Unknown keys are errors
naming the key, with a did-you-mean. Secrets are never values here, only the names of environment variables.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .catalog import Risk
from .decide import BACKENDS
from .errors import ConfigError, did_you_mean

ConfidenceFormula = Literal["reference", "top", "margin", "entropy", "reported"]
BackendName = Literal[BACKENDS]  # type: ignore[valid-type]  # the registry in decide/__init__.py


class _Section(BaseModel):
    # allow_inf_nan=False: `high = nan` or `timeout = inf` is refused as "not a finite number"
    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)


class Thresholds(_Section):
    high: float = Field(0.75, ge=0.0, le=1.0)
    medium: float = Field(0.45, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if self.medium > self.high:
            raise ValueError(f"medium ({self.medium}) must not be above high ({self.high})")
        return self


class RetrievalConfig(_Section):
    top_k: int = Field(5, ge=1, le=255)
    direct_max: int = Field(8, ge=0)
    always_include: list[str] = []
    # ask_user / human_review are safety exits: offer them in every question unless told not to.
    include_escalation: bool = True


class PolicyConfig(Thresholds):
    confidence: ConfidenceFormula = "reference"
    confirm_risks: list[Risk] = [Risk.payment, Risk.permission, Risk.outbound]
    risk: dict[Risk, Thresholds] = {}
    fitted_for: str | None = None  # written by `calibrate`: formula and model the thresholds suit

    def thresholds_for(self, risk: Risk | None) -> Thresholds:
        if risk is not None and risk in self.risk:
            return self.risk[risk]
        return Thresholds(high=self.high, medium=self.medium)


class LocalConfig(_Section):
    examples: list[str] = []  # globs of session files whose labelled turns become exemplars
    temperature: float | None = Field(None, gt=0.0)
    none_margin: float | None = None

    @field_validator("examples", mode="before")
    @classmethod
    def _one_pattern(cls, value: Any) -> Any:
        """`examples = "cases.toml"`: one session file (or glob) named alone is the one-item list."""
        return [value] if isinstance(value, str) else value


class SemanticConfig(_Section):
    """The semantic backend (extra `semantic`); exemplars come from [local] examples."""

    cache_dir: str | None = None  # option embeddings; default $XDG_CACHE_HOME/tui-router/embeddings
    cache: bool = True  # false: embed at every start, keep nothing on disk
    threads: int = Field(1, ge=1, le=64)  # CPU threads for the embedding model
    workers: int = Field(0, ge=0, le=64)  # models embedding a large batch side by side; 0: one per core
    max_chars: int = Field(2000, ge=100, le=100_000)  # longer messages are embedded from their start
    temperature: float | None = Field(None, gt=0.0)  # >1 flattens the choice between tools
    none_bias: float = Field(0.0, ge=-20.0, le=20.0)  # added to the none log-odds; >0 defers more
    # sentence encoders (tui_router/encoders.py): built-in names or local ONNX folders (a path with a
    # '/', relative to this file); the first that loads drives the decision
    encoders: list[str] = ["e5"]
    reranker: str = ""  # "" (none) | "ms-marco-minilm" | a local cross-encoder ONNX folder
    cache_max_mb: int = Field(256, ge=1, le=1_000_000)  # per encoder: message vectors kept on disk

    @field_validator("encoders", mode="before")
    @classmethod
    def _one_encoder(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("encoders")
    @classmethod
    def _known_encoders(cls, value: list[str]) -> list[str]:
        from .encoder_specs import ENCODER_NAMES, spec_problem  # standard library only

        if not value:
            raise ValueError("names no encoder; e.g. encoders = [\"e5\"]")
        for spec in value:
            if problem := spec_problem(spec, ENCODER_NAMES, "encoder"):
                raise ValueError(problem)
        repeated = sorted({s for s in value if value.count(s) > 1})
        if repeated:
            raise ValueError(f"names {repeated[0]!r} twice")
        return value

    @field_validator("reranker")
    @classmethod
    def _known_reranker(cls, value: str) -> str:
        from .encoder_specs import RERANKER_NAMES, spec_problem

        if value and (problem := spec_problem(value, RERANKER_NAMES, "reranker")):
            raise ValueError(problem)
        return value


# Header names that carry credentials: a config file must name an env var instead (api_key_env).
SECRET_HEADER_WORDS = ("authorization", "api-key", "apikey", "api_key", "token", "secret", "cookie", "password")


def has_userinfo(url: str) -> bool:
    """Whether a URL carries user:password@ (which httpx would turn into Basic auth)."""
    from urllib.parse import urlsplit

    return "@" in urlsplit(url).netloc


class SystemOneConfig(_Section):
    base_url: str | None = None
    model: str = "jev-latest"
    api_key_env: str = "TYPESAFE_API_KEY"
    # Deadline of one HTTP request, whole: connect, send, headers and the entire reply body.
    timeout: float = Field(30.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    # Deadline of one question, retries and Retry-After waits included (default below).
    total_timeout: float | None = Field(None, gt=0, allow_inf_nan=False)
    # A reply body larger than this is refused (fail closed), not read into memory.
    max_reply_bytes: int = Field(4 * 1024 * 1024, ge=1024, le=256 * 1024 * 1024)
    concurrency: int = Field(8, ge=1, le=256)
    headers: dict[str, str] = {}
    max_options: int = Field(255, ge=2, le=255)
    # Probe the server on first use (cached per base_url and model) to size two-stage routing.
    probe: bool = True

    @property
    def question_budget(self) -> float:
        """Seconds one question may take in all: total_timeout, else timeout × (max_retries + 1)."""
        return self.total_timeout if self.total_timeout is not None else self.timeout * (self.max_retries + 1)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL (e.g. https://api.example.com/v1)")
        if has_userinfo(value):
            # httpx would silently switch to Basic auth; the value is not echoed (it holds a secret)
            raise ValueError(
                "must not carry a user name or password (user:password@host); secrets never go in the config: "
                "put the key in an environment variable and name it in [systemone] api_key_env"
            )
        return value

    @field_validator("headers")
    @classmethod
    def _no_secret_headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if any(word in name.lower() for word in SECRET_HEADER_WORDS):
                raise ValueError(
                    f"header {name!r} looks like a credential; secrets never go in the config file: put the key in an "
                    "environment variable and name it in [systemone] api_key_env (sent as Authorization: Bearer)"
                )
            # refused here, once: at request time httpx's refusal became "cannot connect ... after 3 attempts"
            if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
                raise ValueError(f"header name {name!r} is not a valid HTTP header name (letters, digits and - only, e.g. X-Tenant)")
            if not all(" " <= ch <= "~" or ch == "\t" for ch in value[name]):
                raise ValueError(
                    f"the value of header {name!r} holds a line break, a control or a non-ASCII character, which an HTTP header cannot carry"
                )
        return value


class FallbackConfig(_Section):
    command: list[str] = []
    timeout: float = Field(60.0, gt=0)
    output_cap: int = Field(65536, ge=1)


class ArgumentsConfig(_Section):
    """The arguments step after a route (arguments.py): a command, or the built-in extractor."""

    command: list[str] = []  # argument list, no shell; JSON request on stdin, JSON object on stdout
    timeout: float = Field(10.0, gt=0)
    output_cap: int = Field(65536, ge=2)
    auto: bool = True  # build them in the console after an execute proposal or an approved confirm


class Config(_Section):
    catalog: str = "demo"
    # auto: semantic when its extra is installed (better on every labelled set), else local
    backend: BackendName = "auto"
    # None: the platform's user data folder (platformdirs), the same from any directory
    sessions_dir: str | None = None
    reviewer: str | None = None  # name recorded with each label; default $USER
    # the console's Textual theme (palette: Theme); the console never writes this file, so a theme
    # picked there lasts one run unless named here
    theme: str | None = None
    retrieval: RetrievalConfig = RetrievalConfig()
    policy: PolicyConfig = PolicyConfig()
    local: LocalConfig = LocalConfig()
    semantic: SemanticConfig = SemanticConfig()
    systemone: SystemOneConfig = SystemOneConfig()
    fallback: FallbackConfig = FallbackConfig()
    arguments: ArgumentsConfig = ArgumentsConfig()

    @field_validator("theme")
    @classmethod
    def _known_theme(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from textual.theme import BUILTIN_THEMES  # lazy: only a config naming a theme pays for it

        if value not in BUILTIN_THEMES:
            names = sorted(BUILTIN_THEMES)
            raise ValueError(f"{value!r} is not a Textual theme{did_you_mean(value, names)}; the themes: {', '.join(names)}")
        return value

    # Where the file came from (None: built-in defaults); relative paths resolve against it.
    source: Path | None = Field(None, exclude=True)

    @property
    def base_dir(self) -> Path:
        return self.source.parent if self.source else Path.cwd()

    def resolve(self, value: str) -> Path:
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    def catalog_spec(self) -> str | Path:
        """A bundled catalog name stays a name; anything else is a path relative to the config."""
        from .resources import bundled_catalogs

        if self.catalog in bundled_catalogs() and not self.resolve(self.catalog).exists():
            return self.catalog
        return self.resolve(self.catalog)

    @property
    def sessions_path(self) -> Path:
        if self.sessions_dir is None:
            return default_sessions_path()
        return self.resolve(self.sessions_dir)

    def secret_env_names(self) -> list[str]:
        """Environment variables config names as holding secrets: kept from the fallback command."""
        return [self.systemone.api_key_env]


def _model_fields(model: type[BaseModel], loc: tuple[Any, ...]) -> set[str]:
    """Field names at a nested location, for did-you-mean on unknown keys."""
    current: Any = model
    pending_value_type: Any = None
    for part in loc[:-1]:
        if pending_value_type is not None:  # a key of a dict[..., Model]
            current, pending_value_type = pending_value_type, None
            continue
        field = current.model_fields.get(str(part))
        annotation = field.annotation if field else None
        if get_origin(annotation) is dict:
            pending_value_type = get_args(annotation)[1]
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            current = annotation
        else:
            return set()
    return set(current.model_fields) - {"source"}


def config_from_dict(data: dict[str, Any], source: Path | None = None) -> Config:
    where = str(source) if source else "config"
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                hint = did_you_mean(str(err["loc"][-1]), _model_fields(Config, err["loc"]))
                problems.append(f"{where}: unknown key '{key}'{hint}")
            else:
                msg = err["msg"].removeprefix("Value error, ").replace("Input should be", "must be")
                problems.append(f"{where}: '{key or 'config'}' {msg}")
        raise ConfigError(f"{where}: invalid configuration", problems) from None
    return config.model_copy(update={"source": source})


def find_config_file(explicit: str | Path | None = None) -> Path | None:
    if explicit:
        path = Path(explicit).expanduser()
        if not path.exists() and not path.is_symlink():  # anything else present: the reader says what it is
            raise ConfigError(f"{path}: config file not found")
        return path
    env = os.environ.get("TUI_ROUTER_CONFIG")
    if env:
        path = Path(env).expanduser()
        if not path.exists() and not path.is_symlink():
            raise ConfigError(f"{path}: config file named by TUI_ROUTER_CONFIG not found")
        return path
    local = Path.cwd() / "tui-router.toml"
    if local.is_file():
        return local
    user = user_config_path()
    return user if user.is_file() else None


def default_sessions_path() -> Path:
    """<user data dir>/sessions, e.g. ~/.local/share/tui-router/sessions (XDG_DATA_HOME honoured)."""
    from platformdirs import user_data_path

    return user_data_path("tui-router", appauthor=False) / "sessions"


def user_config_path() -> Path:
    """<user config dir>/config.toml via platformdirs, like the sessions folder: on Linux
    $XDG_CONFIG_HOME/tui-router/config.toml (~/.config/... when that is unset or blank)."""
    from platformdirs import user_config_path as platform_config_path

    return platform_config_path("tui-router", appauthor=False) / "config.toml"


def load_config(explicit: str | Path | None = None) -> Config:
    path = find_config_file(explicit)
    if path is None:
        return Config()
    from . import tomlio  # the one reading path: regular files, size and nesting limits, finite numbers

    data = tomlio.read_toml_file(path, "config", ConfigError)
    try:
        source = path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        source = path.absolute()
    return config_from_dict(data, source)


def example_files(pattern: str, base_dir: Path) -> tuple[str, list[Path]]:
    """A [local] examples glob resolved against the config file's folder, and the files it names (sorted)."""
    import glob

    full = pattern if Path(pattern).is_absolute() else str(base_dir / pattern)
    return full, [Path(name) for name in sorted(glob.glob(full, recursive=True)) if Path(name).is_file()]


def unmatched_example_patterns(config: Config) -> list[str]:
    """The [local] examples patterns that name no file, as one warning sentence each: a path
    resolves against the config file's folder, not the working folder, and a slip there silently
    taught nothing (an eval measured without the exemplars it was run for)."""
    lines = []
    for pattern in config.local.examples:
        full, files = example_files(pattern, config.base_dir)
        if not files:
            lines.append(f"[local] examples '{pattern}' names no file (looked for {full}; relative paths start at the config file's folder)")
    return lines
