"""What OpenAI's API refuses, and how it says so: the request-body rules and error bodies of the stand-in
server (:mod:`fault_server`), kept apart so that each rule can be read against the reference it follows.

Sources (read as documentation; nothing here is taken from their code):

* API reference, "Create chat completion" (https://platform.openai.com/docs/api-reference/chat/create) and
  the request type ``CompletionCreateParams`` of openai-python (``src/openai/types/chat/
  completion_create_params.py``): ``logprobs`` is a boolean; ``top_logprobs`` "an integer between 0 and 20
  ... ``logprobs`` must be set to ``true`` if this parameter is used"; ``temperature`` "between 0 and 2";
  ``max_tokens`` deprecated in favour of ``max_completion_tokens``.
* API reference, "Create completion" (legacy, https://platform.openai.com/docs/api-reference/completions/create):
  ``logprobs`` an integer, "the maximum value for ``logprobs`` is 5"; no ``max_completion_tokens``.
* API reference, "Error codes" (https://platform.openai.com/docs/guides/error-codes) and openai-python's
  ``ErrorObject`` (``src/openai/types/shared/error_object.py``): every error is ``{"error": {"message",
  "type", "param", "code"}}``; 400 for an invalid request. The messages and codes below are the ones OpenAI's
  servers answer, as quoted in public bug reports: ``Invalid 'n': integer above maximum value. Expected a
  value <= 128, but got 130 instead.`` (``integer_above_max_value``), ``Invalid 'max_tokens': integer below
  minimum value ...`` (``integer_below_min_value``), ``Invalid 'temperature': decimal above maximum value ...``
  (``decimal_above_max_value``), ``Invalid type for 'max_tokens': expected an integer, but got a string
  instead.`` (``invalid_type``), ``The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled.``
  (code null), ``Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.``
  (``invalid_parameter_combination``), ``Unrecognized request argument supplied: NAME`` (code null).
* API reference, "List batches" (https://platform.openai.com/docs/api-reference/batch/list) and "List files"
  (https://platform.openai.com/docs/api-reference/files/list): cursor pages ``{"object": "list", "data",
  "first_id", "last_id", "has_more"}``, newest first, ``after`` an object id, ``limit`` 1..100 (default 20)
  for batches and 1..10,000 (default 10,000) for files.
* Batch API guide (https://platform.openai.com/docs/guides/batch) and "Rate limits"
  (https://platform.openai.com/docs/guides/rate-limits): each model has a limit on the prompt tokens enqueued
  in batches at once; a batch past it fails at validation with ``errors.data`` code ``token_limit_exceeded``
  ("Enqueued token limit reached for MODEL in organization ORG. Limit: N enqueued tokens. Please try again
  once some in_progress batches have been completed."). A request whose body is refused does not fail its
  batch: it is a line of the error file whose ``response`` holds the status and error body it would get alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Parameters each endpoint takes (openai-python's request types); any other is refused.
CHAT_PARAMS = frozenset({
    "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "reasoning_effort", "response_format", "safety_identifier", "seed",
    "service_tier", "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools",
    "top_logprobs", "top_p", "user", "verbosity", "web_search_options"})
COMPLETION_PARAMS = frozenset({
    "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
    "presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user"})
#: Most top log-probabilities per position: ``top_logprobs`` on chat, ``logprobs`` on legacy completions.
MAX_TOP_LOGPROBS = {"chat": 20, "completions": 5}
#: Most choices per request (``n``).
MAX_N = 128
#: Batch and file list pages: (default limit, largest limit).
LIST_LIMITS = {"batches": (20, 100), "files": (10_000, 10_000)}

#: (name, JSON type, lowest, highest) of the numeric and boolean parameters checked, per endpoint.
_CHECKS: dict[str, tuple[tuple[str, str, float | None, float | None], ...]] = {
    "chat": (("logprobs", "boolean", None, None), ("top_logprobs", "integer", 0, MAX_TOP_LOGPROBS["chat"]),
             ("max_tokens", "integer", 1, None), ("max_completion_tokens", "integer", 1, None),
             ("n", "integer", 1, MAX_N), ("temperature", "decimal", 0, 2), ("top_p", "decimal", 0, 1),
             ("seed", "integer", None, None), ("stream", "boolean", None, None)),
    "completions": (("logprobs", "integer", 0, MAX_TOP_LOGPROBS["completions"]), ("max_tokens", "integer", 0, None),
                    ("n", "integer", 1, MAX_N), ("temperature", "decimal", 0, 2), ("top_p", "decimal", 0, 1),
                    ("seed", "integer", None, None), ("echo", "boolean", None, None),
                    ("stream", "boolean", None, None)),
}


def error(message: str, kind: str = "invalid_request_error", param: str | None = None,
          code: str | None = None) -> dict[str, Any]:
    """An error body as OpenAI writes one: all four fields, ``param`` and ``code`` null where none applies."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def json_type(value: object) -> str:
    """The name OpenAI's messages give a JSON value's type ("an integer", "a decimal", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "decimal"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _article(name: str) -> str:
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _typed(name: str, want: str, value: object) -> dict[str, Any] | None:
    """The ``invalid_type`` error for ``value`` of parameter ``name`` when it is not of type ``want`` (an
    integer is a decimal too; a decimal with no fraction is not an integer)."""
    got = json_type(value)
    if got == want or (want == "decimal" and got == "integer"):
        return None
    return error(f"Invalid type for '{name}': expected {_article(want)}, but got {_article(got)} instead.",
                 param=name, code="invalid_type")


def _ranged(name: str, kind: str, value: float, low: float | None, high: float | None) -> dict[str, Any] | None:
    """The range error for ``value`` outside [``low``, ``high``]."""
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    if low is not None and value < low:
        return error(f"Invalid '{name}': {kind} below minimum value. Expected a value >= {low:g}, but got {shown} "
                     "instead.", param=name, code=f"{kind}_below_min_value")
    if high is not None and value > high:
        return error(f"Invalid '{name}': {kind} above maximum value. Expected a value <= {high:g}, but got {shown} "
                     "instead.", param=name, code=f"{kind}_above_max_value")
    return None


def refuse(body: object, endpoint: str) -> dict[str, Any] | None:
    """The error body OpenAI answers a request ``body`` to ``endpoint`` ("chat" or "completions") with (always
    HTTP 400), or None when it takes it. One error: the first rule broken, in the order below."""
    if not isinstance(body, dict):
        return error("We could not parse the JSON body of your request. The OpenAI API expects a JSON payload.")
    known = CHAT_PARAMS if endpoint == "chat" else COMPLETION_PARAMS
    unknown = sorted(k for k in body if k not in known)
    if unknown:
        return error(f"Unrecognized request argument supplied: {unknown[0]}")
    for name in ("model", "messages" if endpoint == "chat" else "prompt"):
        if name not in body:
            return error(f"Missing required parameter: '{name}'.", param=name, code="missing_required_parameter")
    if not isinstance(body["model"], str):
        return _typed("model", "string", body["model"])
    if endpoint == "chat" and not isinstance(body["messages"], list):
        return _typed("messages", "array", body["messages"])
    for name, want, low, high in _CHECKS[endpoint]:
        value = body.get(name)
        if value is None:  # absent, or null: the default applies
            continue
        wrong = _typed(name, want, value)
        if wrong is not None:
            return wrong
        if want != "boolean":
            wrong = _ranged(name, want, value, low, high)
            if wrong is not None:
                return wrong
    if endpoint == "chat" and body.get("top_logprobs") is not None and body.get("logprobs") is not True:
        return error("The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled.", param="top_logprobs")
    if body.get("max_tokens") is not None and body.get("max_completion_tokens") is not None:
        return error("Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.",
                     param="max_tokens", code="invalid_parameter_combination")
    return None


def page(objects: Sequence[dict[str, Any]], query: dict[str, list[str]], kind: str
         ) -> tuple[int, dict[str, Any]]:
    """One page of ``objects`` (newest first) for the query of a list request (``limit``, ``after``; files also
    ``order`` and ``purpose``): HTTP status and body."""
    default, most = LIST_LIMITS[kind]
    raw = (query.get("limit") or [str(default)])[0]
    try:
        limit = int(raw)
    except ValueError:
        return 400, error("Invalid type for 'limit': expected an integer, but got a string instead.", param="limit",
                          code="invalid_type")
    wrong = _ranged("limit", "integer", limit, 1, most)
    if wrong is not None:
        return 400, wrong
    rows = list(objects)
    if kind == "files":
        purpose = next(iter(query.get("purpose") or ()), None)
        if purpose is not None:
            rows = [r for r in rows if r.get("purpose") == purpose]
        order = (query.get("order") or ["desc"])[0]
        if order not in ("asc", "desc"):
            return 400, error(f"Invalid value for 'order': expected one of 'asc' or 'desc', got '{order}'.",
                              param="order", code="invalid_value")
        if order == "asc":
            rows.reverse()
    after = next(iter(query.get("after") or ()), None)
    if after is not None:
        ids = [r["id"] for r in rows]
        rows = rows[ids.index(after) + 1:] if after in ids else []
    data = rows[:limit]
    return 200, {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                 "last_id": data[-1]["id"] if data else None, "has_more": len(rows) > limit}


def enqueued_limit_error(model: str, limit: int) -> dict[str, Any]:
    """The ``errors.data`` entry of a batch that would pass the model's enqueued-token limit."""
    return {"code": "token_limit_exceeded", "line": None, "param": None,
            "message": f"Enqueued token limit reached for {model} in organization org-fault. Limit: {limit:,} "
                       "enqueued tokens. Please try again once some in_progress batches have been completed."}
