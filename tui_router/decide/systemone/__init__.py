"""The System One backend, its client, wire format and server profile, in one package.

Layers, each importing only those before it (no cycle): wire (request body, reply checks) ->
client (HTTP, retries, error texts) -> profile (what a server accepts) -> backend.
"""

from __future__ import annotations

from .backend import SystemOneBackend
from .client import (
    BACKOFF_BASE,
    BACKOFF_CAP,
    MAX_RETRY_WAIT,
    RETRY_STATUSES,
    ServerError,
    SystemOneClient,
    describe_error_body,
    list_models,
    public_url,
    retry_delay,
)
from .profile import PROTOCOL_MAX_OPTIONS, ProfileCache, ServerProfile, probe_server
from .wire import (
    QUESTION_ID,
    ModelInfo,
    NotJSON,
    Reply,
    answer_from_reply,
    models_from_reply,
    parse_json_strict,
    question_body,
)

__all__ = [
    "BACKOFF_BASE", "BACKOFF_CAP", "MAX_RETRY_WAIT", "PROTOCOL_MAX_OPTIONS", "QUESTION_ID", "RETRY_STATUSES",
    "ModelInfo", "NotJSON", "ProfileCache", "Reply", "ServerError", "ServerProfile", "SystemOneBackend",
    "SystemOneClient", "answer_from_reply", "describe_error_body", "list_models", "models_from_reply",
    "parse_json_strict", "probe_server", "public_url", "question_body", "retry_delay",
]
