"""Render a user message through a model's own chat template (Jinja, sandboxed).

A chat template is read from the model file, so it is untrusted input like a user's prompt
template: it renders in :class:`judge.core.sandbox.StrictSandbox`, and any failure (syntax, sandbox,
``raise_exception``, a runtime error) becomes a :class:`judge.core.errors.TemplateError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import jinja2

from ..core.errors import BackendError, TemplateError
from ..core.sandbox import StrictSandbox, render_error

#: Stands in for the user's text so that the template's own markup and the text can be tokenized apart
#: (the text must never be parsed for special tokens).
SENTINEL = "\x00JUDGE_USER_TEXT\x00"


class _ChatTemplateRaised(Exception):
    """The template called ``raise_exception`` (its own way of refusing the messages)."""


@lru_cache(maxsize=16)
def _template(source: str) -> jinja2.Template:
    # Default (lenient) undefined: chat templates routinely test optional variables like `tools`.
    env = StrictSandbox(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message: str) -> None:
        raise _ChatTemplateRaised(message)

    env.globals["raise_exception"] = raise_exception
    return env.from_string(source)


def chat_parts(
    template: str, bos_token: str = "", eos_token: str = "", *, name: str = "the model's chat template"
) -> tuple[str, str]:
    """(text before the user message, text after it up to where the assistant starts answering).

    Raises TemplateError (naming ``name``) when the template does not parse, breaks the sandbox,
    fails while rendering, or does not place the user message exactly once.
    """
    try:
        rendered = _template(template).render(
            messages=[{"role": "user", "content": SENTINEL}],
            add_generation_prompt=True,
            bos_token=bos_token,
            eos_token=eos_token,
        )
    except _ChatTemplateRaised as exc:
        raise TemplateError(f"{name}: the template refused a single user message: {exc}") from None
    except Exception as exc:  # untrusted template code: whatever it raises is its own fault
        raise TemplateError(f"{name}: {render_error(exc)}") from None
    if rendered.count(SENTINEL) != 1:
        raise TemplateError(f"{name}: the template did not place the user message exactly once")
    before, after = rendered.split(SENTINEL)
    return before, after


def chat_tokens(model_id: str, chat: tuple[list[int], list[int]] | None, body: Callable[[], list[int]],
                bos: list[int]) -> list[int]:
    """A chat prompt's tokens as the model sees them: the template's parts (``chat``, tokenized) around the
    text's own (``body``, tokenized only once the model is known to have a template), after ``bos`` (the
    token the model adds before a prompt, [] for none) unless the parts already start with it."""
    if chat is None:
        raise BackendError(f"model {model_id} has no chat template; use chat=False")
    toks = chat[0] + body() + chat[1]
    return bos + toks if bos and toks[:1] != bos[:1] else toks
