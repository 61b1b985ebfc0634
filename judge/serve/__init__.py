"""``judge serve``: the judge of ``judge score`` behind HTTP, for scoring a chatbot's replies as they happen.

One judge is built at startup through the engine (:mod:`judge.engine`) from the same options as
``judge score``; every request's items go through the same loader checks, the same scorer and the
same row schema, so a response row is the row ``judge score`` writes for that item.

Starlette and uvicorn are an optional extra (``pip install 'dialogue-judge[serve]'``) and are imported only
when the service starts, so ``import judge`` never pulls them in.
"""

from __future__ import annotations

from ..core.errors import MissingExtraError


def require_extra() -> None:
    """Fail with the install command when the web stack is missing (before any model loads)."""
    for module in ("starlette", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            raise MissingExtraError("judge serve", "serve", module) from None
