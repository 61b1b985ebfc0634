"""Templates are untrusted code: users' prompt templates and models' chat templates both render in
judge.core.sandbox.StrictSandbox. Every attempt to reach Python internals fails with a security error
(TemplateError naming the template), and nothing a template does can change the data it is given.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from judge.backends.chat import SENTINEL, chat_parts
from judge.core.errors import TemplateError
from judge.core.sandbox import StrictSandbox
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.prompts.templates import load_template

ITEM = Item(
    id="t1",
    level="turn",
    context=(Turn(USER, "Did you watch the game?"), Turn(SYSTEM, "I did!")),
    response="What a finish.",
    fact="It ended 2-1.",
)

# Expressions that try to reach Python internals from what a template can see: its data (``item``,
# strings, lists, dicts), Jinja's globals (range, dict, lipsum, cycler, joiner, namespace), ``self``,
# ``loop``, filters (attr, format, map) and str.format / format_map field lookups.
ESCAPES = [
    "''.__class__",
    "''.__class__.__mro__",
    "''.__class__.__mro__[1].__subclasses__()",
    "().__class__.__base__",
    "[].__class__",
    "{}.__class__",
    "item.__class__",
    "item.__dict__",
    "item.get.__globals__",
    "item.get.__self__",
    "item.items.__func__",
    "item.context[0].__class__.__init__",
    "cycler.__init__.__globals__",
    "cycler.__init__.__globals__.os",
    "cycler.mro()",
    "joiner.__init__.__globals__",
    "namespace.__init__.__globals__",
    "namespace(a=1).__class__",
    "lipsum.__globals__",
    "lipsum.__globals__['os']",
    "lipsum.__code__",
    "range.__self__",
    "range.__globals__",
    "dict.__class__",
    "dict.mro()",
    "dict['x'].mro()",
    "dict['x'].mro()[1]",
    "self.__init__",
    "self.__init__.__globals__",
    "self._TemplateReference__context",
    "item|attr('__class__')",
    "lipsum|attr('__globals__')",
    "(item|attr('get'))|attr('__self__')",
    "item['__class__']",
    "''['__class__']",
    "'{0.__class__}'.format(item)",
    "'{0.get.__globals__}'.format(item)",
    "'{0.__class__.__mro__}'.format('')",
    "'{x.__class__}'.format_map({'x': item})",
    "('{0.__class__}'|attr('format'))(item)",
    "'%s'|format(item.__class__)",
    "[item]|map(attribute='__class__')|list",
    "[item]|selectattr('__class__')|list",
    "item.update(id='pwned')",
    "item.context.append(1)",
    "item.context.pop()",
    "item.setdefault('x', 1)",
    "'a' * 10000000",
    "[0] * 10000000",
    "2 ** 1000000",
]


def _template(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "evil.j2"
    path.write_text(body + "\nAnswer:", encoding="utf-8")
    return path


@pytest.mark.parametrize("expr", ESCAPES)
def test_prompt_template_escape_is_a_security_error(tmp_path, expr):
    path = _template(tmp_path, "{{ " + expr + " }}")
    with pytest.raises(TemplateError) as info:
        load_template(path).render(ITEM)
    msg = str(info.value)
    assert str(path) in msg
    assert "security error" in msg and "sandbox" in msg, msg


STATEMENT_ESCAPES = [
    "{% set f = '{0.__class__}'.format %}{{ f(item) }}",
    "{% set g = item.get %}{{ g.__globals__ }}",
    "{% for t in item.context %}{{ t.__class__ }}{% endfor %}",
    "{% for x in range(3) %}{{ loop.__class__ }}{% endfor %}",
    "{% macro m() %}{% endmacro %}{{ m.__globals__ }}",
    "{% macro m() %}{% endmacro %}{{ m._func }}",
    "{% set ns = namespace() %}{% set ns.x = item.__class__ %}{{ ns.x }}",
    "{% with c = cycler(1, 2) %}{{ c.__init__.__globals__ }}{% endwith %}",
    "{% set s = item.response %}{{ s.__class__.__base__ }}",
    "{{ self.__dict__ }}",
]


@pytest.mark.parametrize("body", STATEMENT_ESCAPES)
def test_prompt_template_statement_escape_is_a_security_error(tmp_path, body):
    path = _template(tmp_path, body)
    with pytest.raises(TemplateError) as info:
        load_template(path).render(ITEM)
    assert str(path) in str(info.value) and "security error" in str(info.value)


@pytest.mark.parametrize("name", ["/etc/passwd", "../../../../../../etc/passwd", "../outside.j2"])
def test_include_cannot_leave_the_template_folder(tmp_path, name):
    inner = tmp_path / "inner"
    inner.mkdir()
    (tmp_path / "outside.j2").write_text("SECRET")
    path = _template(inner, "{% include '" + name + "' %}")
    with pytest.raises(TemplateError) as info:
        load_template(path).render(ITEM)
    assert str(path) in str(info.value) and "not found" in str(info.value)


def test_include_beside_the_template_and_builtin_partials_work(tmp_path):
    (tmp_path / "part.j2").write_text("PART {{ item.response }}")
    path = _template(tmp_path, "{% include 'part.j2' %}")
    assert load_template(path).render(ITEM).startswith("PART What a finish.")


def test_template_cannot_change_the_item(tmp_path):
    path = _template(tmp_path, "{% set item = {'response': 'changed'} %}{{ item.response }}")
    t = load_template(path)
    assert "changed" in t.render(ITEM)
    assert ITEM.response == "What a finish."  # the Item object is never handed to the template
    assert "What a finish." in load_template(_template(tmp_path, "{{ item.response }}")).render(ITEM)


def test_plain_templates_still_work(tmp_path):
    """The sandbox does not get in the way of ordinary template code."""
    body = (
        "{% set ns = namespace(n=0) %}{% for t in item.context %}{% set ns.n = ns.n + 1 %}"
        "{{ loop.index }}. {{ t.speaker|title }}: {{ t.text }}\n{% endfor %}"
        "{{ ns.n }} turns; {{ item.get('fact') or '' }} {{ '%s/%d'|format('x', 2) }} {{ '{}!'.format('ok') }} "
        "{{ 'ab' * 3 }} {{ 2 ** 10 }} {{ dict(a=1).a }} {{ {'_private': 5}._private }}"
    )
    out = load_template(_template(tmp_path, body)).render(ITEM)
    assert "1. User: Did you watch the game?\n2. System: I did!\n2 turns; It ended 2-1. x/2 ok! ababab 1024 1 5" in out


# --- models' chat templates (read from the model file: untrusted too) ------------------------------

CHAT_OK = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}" \
          "{% if add_generation_prompt %}<|assistant|>{% endif %}"


def test_chat_template_renders():
    assert chat_parts(CHAT_OK) == ("<|user|>", "<|end|><|assistant|>")


def _for_chat(expr: str) -> str:
    """The same escape aimed at what a chat template sees (``messages``, a list of dicts)."""
    return re.sub(r"\bitem\b", "messages[0]", re.sub(r"\bitem\.context\b", "messages", expr))


@pytest.mark.parametrize("expr", [_for_chat(e) for e in ESCAPES])
def test_chat_template_escape_is_a_security_error(expr):
    with pytest.raises(TemplateError) as info:
        chat_parts("{{ " + expr + " }}" + CHAT_OK, name="chat template of evil.gguf")
    msg = str(info.value)
    assert msg.startswith("chat template of evil.gguf: ") and "security error" in msg, msg


@pytest.mark.parametrize(
    "source,fragment",
    [
        ("{% for m in messages %}", "syntax error"),
        ("{{ raise_exception('only system messages') }}", "only system messages"),
        ("{{ messages[0]['content'] }}{{ messages[0]['content'] }}", "exactly once"),
        ("no messages at all", "exactly once"),
        ("{% include 'x' %}" + CHAT_OK, "TypeError"),
        ("{{ 1 / 0 }}", "ZeroDivisionError"),
        ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "recursion"),
        ("{% for i in range(10**9) %}{% endfor %}", "Range too big"),
    ],
)
def test_broken_chat_template_is_a_template_error(source, fragment):
    with pytest.raises(TemplateError) as info:
        chat_parts(source, name="chat template of m.gguf")
    assert str(info.value).startswith("chat template of m.gguf: ") and fragment in str(info.value)


def test_chat_template_lenient_undefined_still_works():
    """Real chat templates test optional variables (``tools``, ``system_message``); that must keep working."""
    src = "{% if tools is defined %}T{% endif %}{{ system_message }}" + CHAT_OK
    assert chat_parts(src) == ("<|user|>", "<|end|><|assistant|>")


def test_sentinel_text_is_not_interpreted():
    assert SENTINEL in StrictSandbox().from_string("{{ x }}").render(x=SENTINEL)
