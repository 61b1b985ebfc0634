"""The Jinja sandbox every template is rendered in: users' prompt templates and models' chat templates.

Both are untrusted input (a template file from anywhere, a chat template read from a model file).
On top of Jinja's :class:`~jinja2.sandbox.ImmutableSandboxedEnvironment` (no Python internals, no
mutation of the data passed in, ``str.format`` checked, ``range`` capped), this environment

* raises :class:`~jinja2.sandbox.SecurityError` at once for any blocked attribute, instead of
  returning an undefined value that prints as an empty string (so a probing template fails loudly
  whatever its ``undefined`` policy is);
* treats every ``_``-prefixed attribute as blocked, whether or not the object has it (so
  ``item.get.__globals__`` is a security error, not an "undefined attribute" that hints at which
  internals exist);
* refuses subscripting a class (``dict['x']`` builds a typing alias whose ``mro()`` reaches
  ``object``, which plain Jinja 3.1.6 allows);
* caps the size of ``*`` (string/list repetition) and ``**`` results, so a template cannot exhaust
  memory with one expression.

:func:`render_error` turns any failure of a render into one message for :class:`judge.core.errors.TemplateError`.
"""

from __future__ import annotations

import operator
import types
from collections.abc import Mapping
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

__all__ = ["MAX_REPEAT", "SecurityError", "StrictSandbox", "render_error"]

#: Largest string/list a single ``*`` may build, and the largest ``**`` result in bits.
MAX_REPEAT = 1_000_000
MAX_POWER_BITS = 100_000


def _blocked(obj: Any, attribute: object) -> SecurityError:
    return SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe")


class StrictSandbox(ImmutableSandboxedEnvironment):
    """ImmutableSandboxedEnvironment that fails loudly on any attempt to reach Python internals."""

    intercepted_binops = frozenset({"*", "**"})

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, types.GenericAlias):
            raise _blocked(obj, attribute)
        if isinstance(attribute, str) and attribute.startswith("_"):
            # A mapping may hold such a key as plain data; only attribute access is refused.
            if isinstance(obj, Mapping) and attribute in obj:
                return obj[attribute]
            raise _blocked(obj, attribute)
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, (type, types.GenericAlias)):
            # ``dict['x']`` is a typing alias whose ``.mro()`` reaches ``object`` (plain Jinja lets it).
            raise SecurityError(f"subscripting the class {getattr(obj, '__name__', obj)!r} is unsafe")
        try:
            return obj[argument]
        except (TypeError, LookupError):
            if isinstance(argument, str) and argument.startswith("_"):
                raise _blocked(obj, argument) from None
        return super().getitem(obj, argument)

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        raise _blocked(obj, attribute)

    def call_binop(self, context: jinja2.runtime.Context, op: str, left: Any, right: Any) -> Any:
        if op == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_REPEAT:
                    raise SecurityError(f"'*' would build a sequence of {len(seq) * n} items (limit {MAX_REPEAT})")
            return operator.mul(left, right)
        if op == "**":
            if (isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1
                    and abs(left).bit_length() * right > MAX_POWER_BITS):
                raise SecurityError(f"'**' result too large ({left} ** {right})")
            return operator.pow(left, right)
        return super().call_binop(context, op, left, right)


def render_error(exc: BaseException) -> str:
    """A one-line description of why rendering failed (sandbox, undefined name, or a runtime error)."""
    if isinstance(exc, SecurityError):
        return f"template blocked by the sandbox (security error): {exc}"
    if isinstance(exc, jinja2.UndefinedError):
        return f"undefined variable in template: {exc.message}"
    if isinstance(exc, jinja2.TemplateSyntaxError):
        where = f" ({exc.name or exc.filename}, line {exc.lineno})" if (exc.name or exc.filename) else ""
        return f"template syntax error{where}: {exc.message}"
    if isinstance(exc, jinja2.TemplateNotFound):
        return f"included template not found (only files beside the template or built-in ones): {exc.message}"
    if isinstance(exc, jinja2.TemplateError):
        return f"template error while rendering: {exc}"
    if isinstance(exc, RecursionError):
        return "template recursion too deep"
    if isinstance(exc, MemoryError):
        return "template ran out of memory"
    return f"template failed while rendering: {type(exc).__name__}: {exc}"
