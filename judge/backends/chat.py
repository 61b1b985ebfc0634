"""Render a user message through a model's own chat template (Jinja, sandboxed)."""

from __future__ import annotations

from functools import lru_cache

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

#: Stands in for the user's text so that the template's own markup and the text can be tokenized apart
#: (the text must never be parsed for special tokens).
SENTINEL = "\x00JUDGE_USER_TEXT\x00"


@lru_cache(maxsize=16)
def _template(source: str) -> jinja2.Template:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    return env.from_string(source)


def chat_parts(template: str, bos_token: str = "", eos_token: str = "") -> tuple[str, str]:
    """(text before the user message, text after it up to where the assistant starts answering)."""
    rendered = _template(template).render(
        messages=[{"role": "user", "content": SENTINEL}],
        add_generation_prompt=True,
        bos_token=bos_token,
        eos_token=eos_token,
    )
    if rendered.count(SENTINEL) != 1:
        raise ValueError("chat template did not place the user message exactly once")
    before, after = rendered.split(SENTINEL)
    return before, after
