"""What a chat record says besides its messages: its conversation id, model, version, timestamp, the user's
feedback and every other key, kept as plain metadata (``Item.meta``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .messages import Conversation, Message, Meta, Where, feedback, plain

#: The keys a conversation id is read from, first found wins (also inside a ``metadata`` object).
ID_KEYS = ("conversation_id", "id", "session_id", "thread_id", "conversation")
#: The keys the answering model is read from (it becomes Item.system, what system-level reports group by).
MODEL_KEYS = ("model", "model_name")
#: The keys a user's feedback is read from.
FEEDBACK_KEYS = ("feedback", "thumbs", "stars", "rating")
#: Objects whose keys are lifted to the top level of the metadata (``metadata.version`` is ``version``).
WRAPPERS = ("metadata", "meta")


def conversation(record: Mapping[str, Any], messages: list[Message], where: Where, dataset: str,
                 skip: Collection[str]) -> Conversation:
    """A conversation from a record's ``messages`` and its other keys (``skip``: the keys already read).

    The id is the first of ``ID_KEYS`` found (else ``DATASET-N``: the line in JSON Lines, the index in an array
    or a table); the model
    the first of ``MODEL_KEYS``; feedback one of ``FEEDBACK_KEYS``; every other key is kept as metadata
    (objects and arrays as compact JSON, the keys of a ``metadata`` object lifted)."""
    flat: dict[str, tuple[Any, str]] = {}
    for key, value in record.items():
        if key in skip:
            continue
        if key in WRAPPERS and isinstance(value, dict):
            for sub, inner in value.items():
                flat.setdefault(str(sub), (inner, f"{key}.{sub}"))
        else:
            flat[str(key)] = (value, str(key))
    conv_id = next((str(flat[k][0]) for k in ID_KEYS if k in flat and _scalar(flat[k][0])), None)
    model = next((str(flat[k][0]) for k in MODEL_KEYS if k in flat and _scalar(flat[k][0])), None)
    rating: dict[str, float] = {}
    for key in FEEDBACK_KEYS:
        if key in flat:
            value, path = flat[key]
            rating.update(feedback(value if key != "thumbs" or not isinstance(value, int) else bool(value), where,
                                   path))
    meta: Meta = {key: plain(value) for key, (value, _) in flat.items()}
    # Without an id: the file's name and the line (JSON Lines) or index (an array, a table's row).
    fallback = f"{dataset}-{str(where.record).removeprefix('row ').removeprefix('#')}"
    conv_id = (conv_id or "").strip() or fallback
    meta["conversation_id"] = conv_id
    return Conversation(conv_id, messages, where.record, meta, model, rating)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip() != ""
