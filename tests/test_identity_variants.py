"""A conversation is known by its context, whatever else the file holds: FED's release re-exported with its
speaker labels left in the texts, with a new reply (" ok" appended), with its contexts cut to their last
turns, pasted as one numbered transcript per context or joined by ``__eou__``, is still FED-Turn's and FED-Dial's. Its items get
the registered conversations' names, so the split puts them in those conversations' halves, the shipped
head refuses them before any model loads, and ``lodo`` never learns FED-Turn's weights on them. No model
is loaded; real data from ../shared/data."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from judge.cli import main
from judge.core.errors import InputError
from judge.data.items import Item, Turn, conversation_of
from judge.datasets import load_benchmark, load_items
from judge.datasets.benchmarks import DATASETS, indexed
from judge.datasets.contexts import MIN_CONTEXT, ContextIndex, context_texts, piece_key, pieces, unlabelled
from judge.datasets.identity import fingerprint, identify, index_digest, known_contexts, known_conversations
from judge.datasets.split import split_of
from judge.engine.spec import OTHER_SETS
from judge.harness.config import parse_experiment
from judge.harness.runner import attach_training, plan, prepare_cell
from judge.heads.head import locate_head, read_head

ROOT = Path(__file__).resolve().parents[1]
HEAD = "criteria-qwen2.5-coder-1.5b"
LABEL = {"user": "User", "system": "System"}


@pytest.fixture(scope="module")
def fed(data_dir: Path) -> list[Item]:
    return load_items(data_dir / "fed" / "fed_data.json")


@pytest.fixture(scope="module")
def registered(data_dir: Path) -> dict[str, str]:
    """FED-Turn's and FED-Dial's item ids -> their conversations (the release numbers its records alike)."""
    return {it.id: conversation_of(it) for name in ("FT", "FD") for it in load_benchmark(name, data_dir)}


def _record(it: Item, text: Callable[[Any], str], reply: Callable[[str], str],
            cut: Callable[[tuple[Any, ...]], list[dict[str, str]]] | None = None) -> dict[str, Any]:
    scores = {q: list(v) for q, v in it.annotations.items() if v}
    if it.level == "dialog":
        return {"id": it.id, "dialog": [{"speaker": t.speaker, "text": text(t)} for t in it.dialog], "scores": scores}
    turns = cut(it.context) if cut else [{"speaker": t.speaker, "text": text(t)} for t in it.context]
    return {"id": it.id, "context": turns, "response": reply(it.response or ""), "scores": scores}


def _same(t: Any) -> str:
    return str(t.text)


def _pasted(context: tuple[Any, ...]) -> list[dict[str, str]]:
    """The whole context as one turn: numbered, labelled lines joined by CR LF (a transcript pasted in)."""
    lines = [f"{i}. {LABEL[t.speaker]}: {t.text}" for i, t in enumerate(context, start=1)]
    return [{"speaker": "user", "text": "\r\n".join(lines)}] if lines else []


def _joined(context: tuple[Any, ...]) -> list[dict[str, str]]:
    """The whole context as one turn, its utterances joined by DailyDialog's raw end-of-utterance mark."""
    return [{"speaker": "user", "text": " __eou__ ".join(t.text for t in context)}] if context else []


def _last(k: int) -> Callable[[tuple[Any, ...]], list[dict[str, str]]]:
    return lambda context: [{"speaker": t.speaker, "text": t.text} for t in context[-k:]]


#: The variants of fed_data.json: (name, its records from an item).
VARIANTS: dict[str, Callable[[Item], dict[str, Any]]] = {
    # The speaker labels left in every turn text and in the reply.
    "labels": lambda it: _record(it, lambda t: f"{LABEL[t.speaker]}: {t.text}", lambda r: f"System: {r}"),
    # A new reply to every context: " ok" appended (the turn items only, as a set of new replies would be).
    "new-reply": lambda it: _record(it, _same, lambda r: r + " ok"),
    # Each context pasted as one turn of numbered, labelled CR LF lines, with a new reply.
    "pasted": lambda it: _record(it, _same, lambda r: r + " ok", _pasted),
    # Each context as one text of utterances joined by " __eou__ ", with a new reply.
    "eou": lambda it: _record(it, _same, lambda r: r + " ok", _joined),
    # Each context cut to its last three turns (and to its last two), with a new reply.
    "last-3": lambda it: _record(it, _same, lambda r: r + " ok", _last(3)),
    "last-2": lambda it: _record(it, _same, lambda r: r + " ok", _last(2)),
}
TURN_ONLY = {"new-reply", "pasted", "eou", "last-3", "last-2"}


def _write(fed: list[Item], variant: str, path: Path) -> Path:
    keep = [it for it in fed if it.level == "turn" or variant not in TURN_ONLY]
    path.write_text("".join(json.dumps(VARIANTS[variant](it)) + "\n" for it in keep), encoding="utf-8")
    return path


def _known_by_context(it: Item) -> bool:
    return sum(map(len, pieces(context_texts(it)))) >= MIN_CONTEXT


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_variant_of_feds_release_is_in_its_registered_conversations_and_halves(fed, registered, variant, tmp_path):
    """Before, 171 (labels) and 198 (new reply) of the 375 turn items were in the other half. Now every item
    is in its registered conversation, but for contexts that name none: a cut context of fewer than
    MIN_CONTEXT letters and digits, and the one opening exchange ("Hi" / "Hi there." / "How are you") that
    three FED conversations share, which only the loader's exact texts told apart."""
    items = load_items(_write(fed, variant, tmp_path / f"{variant}.jsonl"))
    assert len(items) == (375 if variant in TURN_ONLY else 500)
    known = [it for it in items if _known_by_context(it)] if variant.startswith("last-") else items
    assert len(known) > 0.85 * len(items)
    wrong = {it.id for it in known if conversation_of(it) != registered[it.id]}
    assert wrong <= _shared_openings(fed, registered) and len(wrong) <= 1
    assert sum(split_of(conversation_of(it)) != split_of(registered[it.id]) for it in known) <= len(wrong)
    if not variant.startswith("last-"):  # each in a FED conversation, the head refuses every one
        assert {conversation_of(it) for it in items} <= set(registered.values())


def _shared_openings(fed: list[Item], registered: dict[str, str]) -> set[str]:
    """The turn items whose context, as compared, is the context of items of other FED conversations too."""
    by_context: dict[tuple[str, ...], set[str]] = {}
    for it in fed:
        if it.level == "turn":
            by_context.setdefault(pieces(context_texts(it)), set()).add(registered[it.id])
    return {it.id for it in fed if it.level == "turn" and len(by_context[pieces(context_texts(it))]) > 1}


@pytest.mark.parametrize("variant", ["labels", "new-reply", "pasted", "last-2"])
def test_the_shipped_head_refuses_a_variant_before_any_model_loads(fed, variant, tmp_path, capsys):
    path = _write(fed, variant, tmp_path / f"{variant}.jsonl")
    items = load_items(path)
    n = len({conversation_of(it) for it in items})
    with pytest.raises(InputError, match=re.escape("the head learned from fed-turn (all of it), fed-dial (all of it)")) as err:
        read_head(locate_head(HEAD)).check_not_trained_on(items)
    if variant == "labels":  # every conversation of the file is FED's
        assert f"which hold {n} of the {n} conversations" in str(err.value)
        assert main(["score", str(path), "--method", "criteria-head"]) == 2
        assert "the head learned from fed-turn" in capsys.readouterr().err


def _lodo_cells(data_dir: Path, path: Path) -> dict[str, Any]:
    exp = parse_experiment({
        "data_dir": str(data_dir), "split": "test",
        "datasets": ["FT", "DGR", {"path": str(path), "name": "fed-copy", "quality": "Overall",
                                    "scales": {"Overall": [0, 4]}}],
        "methods": [{"name": "len", "type": "classic", "scorer": "length"},
                    {"name": "len2", "type": "classic", "scorer": "length"},
                    {"name": "lodo", "type": "ensemble", "members": ["len", "len2"], "fit": "lodo"}]}, "lodo.toml")
    prepared = [(c, prepare_cell(c, exp)) for c in plan(exp)]
    attach_training(prepared, exp)
    return {c.dataset: (c, p) for c, p in prepared if p.spec.kind.trained_on(p.spec) == OTHER_SETS}


@pytest.mark.parametrize("variant", ["labels", "new-reply"])
def test_lodo_never_learns_fed_turns_weights_on_a_variant_of_its_release(fed, data_dir, variant, tmp_path):
    """Before, FED-Turn's lodo cell learned on the variant's test half: 93 of FED-Turn's 183 scored items."""
    cells = _lodo_cells(data_dir, _write(fed, variant, tmp_path / f"{variant}.jsonl"))
    ft, prep = cells["fed-turn"]
    assert len(ft.items) == 183
    assert dict(ft.not_trained_on) == {"fed-copy": "shares conversations with fed-turn"}
    assert [p is cells["dailydialog-grade"][1] for p in prep.training] == [True]
    copy, _ = cells["fed-copy"]
    assert {it.id for it in copy.items} == {it.id for it in ft.items} | (
        set() if variant in TURN_ONLY else {it.id for it in copy.items if it.level == "dialog"})


def test_labels_and_turn_numbers_are_dropped_and_names_are_not():
    assert [unlabelled(s) for s in ("User: Hi!", "A: ok", "Speaker 1: yes", "Human:hello", "[System]: Hey",
                                    "Bot : sure", "3. User: Hi!", "Turn 4: Person B: no", "(2) you: fine",
                                    "#7 AI: beep")] == \
        ["Hi!", "ok", "yes", "hello", "Hey", "sure", "Hi!", "no", "fine", "beep"]
    assert [unlabelled(s) for s in ("Alice: hi", "Note the time", "3 dogs", "")] == \
        ["Alice: hi", "Note the time", "3 dogs", ""]
    assert pieces(["User: Don't go.\r\nSystem:  OK!", "", "  "]) == ("dontgo", "ok")
    assert pieces(["Hi __eou__ Hello! </s> 2. B: Bye [SEP] a | b\tc"]) == ("hi", "hello", "bye", "a", "b", "c")
    assert f"holding {MIN_CONTEXT} letters and digits or more" in (ROOT / "docs" / "harness.md").read_text()


def test_what_is_not_a_registered_context_names_no_registered_conversation(fed, registered):
    """A short context, an edited turn, a context that continues a registered one with a turn of its own,
    and the documented examples: no match, so their items keep names of their own (a head may score them)."""
    index = known_contexts()
    turn = next(it for it in fed if it.level == "turn" and len(it.context) >= 5)
    assert index.matches(turn) == (registered[turn.id],)
    ctx = turn.context
    edited = replace(turn, context=(*ctx[:-1], replace(ctx[-1], text=ctx[-1].text + " really")))
    longer = replace(turn, context=(*ctx, replace(ctx[0], text="and one more turn of my own, as a user would")))
    short = replace(turn, context=(replace(ctx[0], text="Hi, how are you?"),))
    assert index.matches(edited) == index.matches(longer) == index.matches(short) == ()
    own = load_items(ROOT / "examples" / "dialogues.jsonl")
    assert not [it.id for it in own if index.matches(it)]
    assert not {conversation_of(it) for it in own} & set(registered.values())


def test_a_context_two_conversations_hold_follows_its_group():
    """A run two registered conversations hold names both: the item takes the one its group's other items
    name, and alone the first by name."""
    x = ["the first turn of the story", "a second turn that both share", "and a third that both share",
         "a fourth, only in conversation a"]
    keys = [piece_key(p) for p in pieces(x)]
    index = ContextIndex.from_index({"conv:a": [" ".join(keys[1:])], "conv:b": [" ".join(keys[:3])]})

    def item(i: int, turns: list[str], group: str) -> Item:
        return Item(id=f"i{i}", level="turn", context=tuple(Turn("user", t) for t in turns), response="new",
                    group=group)

    both, only_b, alone = item(0, x[1:3], "g"), item(1, x[0:2], "g"), item(2, x[1:3], "h")
    assert index.matches(both) == ("conv:a", "conv:b") and index.matches(only_b) == ("conv:b",)
    identify([both, only_b, alone], known={}, contexts=index)
    assert (both.conversation, only_b.conversation, alone.conversation) == ("conv:b", "conv:b", "conv:a")


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_a_registered_set_is_named_by_its_fingerprints_never_by_context(data_dir, name):
    """Every item of a registered set is in the index by its fingerprint, so the context rule never names one
    and its halves are the ones before it (a set registered later gets the same by write_index)."""
    if not (data_dir / DATASETS[name].path).exists():
        pytest.skip(f"{name}: its file is not shipped")
    if not indexed(DATASETS[name].corpus):
        pytest.skip(f"{name}: a response-pair set, named by its instructions' texts (tests/test_set_pandalm.py, test_set_llmbar.py)")
    items = load_items(data_dir / DATASETS[name].path, format=DATASETS[name].format, dataset=name,
                       identified=False)
    known = known_conversations()
    assert all(fingerprint(it) in known for it in items)
    identify(items)
    by_fingerprint = [it.conversation for it in items]
    identify(items, contexts=ContextIndex())
    assert [it.conversation for it in items] == by_fingerprint


def test_the_registered_sets_halves_did_not_move():
    """The context index sits beside the item fingerprints, which alone fix the registered halves (their
    digest, which every committed run summary records, is the one before; tests/test_split.py pins each
    shipped set's halves item by item)."""
    assert index_digest() == "45d59657b794d939"
    assert json.loads((ROOT / "benchmarks" / "halves_history.json").read_text())["current"] == index_digest()
