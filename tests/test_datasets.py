"""Tests for judge.datasets: every loader on the real benchmark files, and the JSONL validator."""

from __future__ import annotations

import itertools
import json
import math
import statistics
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge.core.errors import InputError, UnknownNameError
from judge.data.items import KNOWN_SPEAKERS, SYSTEM, USER, Item
from judge.data.qualities import Quality
from judge.datasets import FORMATS, check_scale, detect_format, load_benchmark, load_items
from judge.datasets.benchmarks import DATASETS, dataset_info

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "dialogues.jsonl"
#: A 1-5 overall quality, the scale the checked ratings must lie on.
OVERALL_1_5 = Quality("overall", "turn", 1, 5, "good the response is overall")


# ``data_dir`` is the fixture in conftest.py: missing benchmark data fails these tests, never skips them.


_cache: dict[str, list[Item]] = {}


def bench(name: str, data_dir: Path) -> list[Item]:
    """Each file is loaded once per test session (items are not mutated by the tests)."""
    if name not in _cache:
        _cache[name] = load_benchmark(name, data_dir)
    return _cache[name]


def mean_human(items: list[Item], key: str) -> float:
    values = [h for h in (it.human(key) for it in items) if h is not None]
    return statistics.fmean(values)


# --- benchmark files ------------------------------------------------------------------------------

COUNTS = {
    "fed-turn": 375,
    "fed-dial": 125,
    "topical-usr": 360,
    "persona-usr": 300,
    "dailydialog-zhao": 900,
    "dailydialog-gupta": 500,
    "dailydialog-grade": 300,
    "empathetic-grade": 300,
    "fed": 500,
    "usr-topical": 360,
    "usr-persona": 300,
    "gupta-csv": 500,
}


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_counts_levels_and_ids(name: str, data_dir: Path) -> None:
    items = bench(name, data_dir)
    assert len(items) == COUNTS[name]
    assert len({it.id for it in items}) == len(items)
    assert all(it.dataset == name for it in items)
    for it in items:
        if it.level == "turn":
            assert it.response and it.response == it.response.strip()
            assert not it.dialog
        else:
            assert it.dialog and not it.context and it.response is None
        assert all(t.text and t.text == t.text.strip() for t in it.turns)
        assert all(t.speaker in (USER, SYSTEM) for t in it.turns)
        assert it.group
    # The two other DSTC10 files are registered but not in the shared data (see tests/test_sources.py); the
    # sets of later releases are counted by tests of their own (tests/test_set_*.py).
    assert set(COUNTS) | {"persona-zhao", "convai2-grade"} <= set(DATASETS)


def test_fed_original_levels(data_dir: Path) -> None:
    items = bench("fed", data_dir)
    levels = Counter(it.level for it in items)
    assert levels == {"turn": 375, "dialog": 125}
    assert [it.id for it in items if it.level == "turn"] == [f"fed-turn_{i:05d}" for i in range(375)]
    assert [it.id for it in items if it.level == "dialog"] == [f"fed-dial_{i:05d}" for i in range(125)]
    assert Counter(it.system for it in items if it.level == "turn") == {"Meena": 120, "Mitsuku": 132, "Human": 123}


@pytest.mark.parametrize(
    ("name", "key", "expected"),
    [
        ("FT", "Overall", 2.825),
        ("FD", "Overall", 2.802),
        ("TU", "Overall", 3.144),
        ("PU", "Overall", 3.770),
        ("DZ", "appropriateness", 3.204),
        ("DGU", "overall", 2.806),
        ("DGR", "relevance", 3.106),
        ("EG", "relevance", 2.803),
        ("usr-topical", "Overall", 3.144),
        ("usr-persona", "Overall", 3.770),
        ("gupta-csv", "overall", 2.806),
    ],
)
def test_human_means_match_data_readme(name: str, key: str, expected: float, data_dir: Path) -> None:
    items = bench(dataset_info(name).name, data_dir)
    assert round(mean_human(items, key), 3) == pytest.approx(expected, abs=1e-9)


def test_fed_original_means_per_level(data_dir: Path) -> None:
    items = bench("fed", data_dir)
    assert round(mean_human([i for i in items if i.level == "turn"], "Overall"), 3) == 2.825
    assert round(mean_human([i for i in items if i.level == "dialog"], "Overall"), 3) == 2.802


def test_single_items_by_hand(data_dir: Path) -> None:
    ft = bench("fed-turn", data_dir)[0]
    assert ft.human("Overall") == pytest.approx((2 + 1 + 3 + 3 + 4) / 5)
    assert ft.human("overall") == ft.human("Overall")  # case-insensitive key
    assert ft.response == "It's probably boring, isn't it?"  # "System: " label stripped
    assert ft.context[0].text == "Hi!" and ft.context[-1].text == "Can't say"
    assert ft.system == "Meena" and ft.next_user is None

    dz = bench("dailydialog-zhao", data_dir)[0]
    assert dz.human("content") == pytest.approx(4.25)
    assert dz.references == ("cash , credit card , or debit card ?",)
    assert [t.speaker for t in dz.context] == [USER, SYSTEM, USER]

    dgu = bench("dailydialog-gupta", data_dir)[0]
    assert dgu.human("overall") == pytest.approx(4.8) and len(dgu.references) == 4

    # FED original: "N/A (...)" answers dropped -> [1, 1, 2].
    fd = next(i for i in bench("fed", data_dir) if i.id == "fed-dial_00000")
    assert fd.annotations["Error recovery"] == (1.0, 1.0, 2.0)
    assert fd.human("Error recovery") == pytest.approx(4 / 3)

    dgr = bench("dailydialog-grade", data_dir)[0]
    assert dgr.system == "transformer_generator" and dgr.references == ()

    pu = bench("persona-usr", data_dir)[0]
    assert pu.fact is not None and pu.fact.startswith("your persona:")


def test_empty_annotation_list_gives_none(data_dir: Path) -> None:
    for name in ("fed-dial", "fed"):
        empty = [i for i in bench(name, data_dir) if i.annotations.get("Error recovery") == ()]
        assert len(empty) == 1
        assert empty[0].human("Error recovery") is None
        assert empty[0].human("Overall") is not None


@pytest.mark.parametrize("name", ["fed-turn", "topical-usr", "persona-usr", "dailydialog-zhao", "dailydialog-gupta", "dailydialog-grade", "empathetic-grade", "gupta-csv", "usr-topical"])
def test_speakers_alternate_user_last(name: str, data_dir: Path) -> None:
    for it in bench(name, data_dir):
        speakers = [t.speaker for t in it.context]
        assert speakers and speakers[-1] == USER, it.id
        assert all(a != b for a, b in itertools.pairwise(speakers)), it.id


def test_fed_dialog_speakers(data_dir: Path) -> None:
    for name in ("fed-dial", "fed"):
        for it in bench(name, data_dir):
            if it.level == "dialog":
                assert it.dialog[0].speaker == USER
                assert {t.speaker for t in it.dialog} == {USER, SYSTEM}


def test_topical_context_split_on_spaced_newlines(data_dir: Path) -> None:
    tu = bench("topical-usr", data_dir)[0]
    assert len(tu.context) == 5
    assert tu.context[-1].text.endswith("can you imagine that much soup ?")
    assert tu.fact and tu.references
    # The "_nofact" placeholder is no knowledge at all.
    assert any(i.fact is None for i in bench("topical-usr", data_dir))


def _same(a: list[Item], b: list[Item], *, groups: bool = True, approx: bool = False) -> None:
    assert len(a) == len(b)
    fields = ["id", "level", "context", "response", "dialog", "references", "fact", "system", "next_user"]
    if groups:
        fields.append("group")
    for x, y in zip(a, b):
        for f in fields:
            assert getattr(x, f) == getattr(y, f), (x.id, f)
        assert x.annotations.keys() == y.annotations.keys(), x.id
        for k in x.annotations:
            if approx:
                assert len(x.annotations[k]) == len(y.annotations[k])
                assert all(math.isclose(p, q, rel_tol=1e-12) for p, q in zip(x.annotations[k], y.annotations[k]))
            else:
                assert x.annotations[k] == y.annotations[k], (x.id, k)


def test_fed_original_equals_dstc10_copy(data_dir: Path) -> None:
    fed = bench("fed", data_dir)
    _same([i for i in fed if i.level == "turn"], bench("fed-turn", data_dir))
    # Dialog groups differ on purpose: in fed_data.json a dialog joins its turns' group.
    _same([i for i in fed if i.level == "dialog"], bench("fed-dial", data_dir), groups=False)


def test_usr_originals_equal_dstc10_copies(data_dir: Path) -> None:
    _same(bench("usr-topical", data_dir), bench("topical-usr", data_dir))
    _same(bench("usr-persona", data_dir), bench("persona-usr", data_dir))


def test_gupta_csv_equals_dstc10_copy(data_dir: Path) -> None:
    # The CSV and the JSON round 3.333... differently in the last bit (4 rows).
    _same(bench("gupta-csv", data_dir), bench("dailydialog-gupta", data_dir), approx=True)


def _group_sizes(items: list[Item]) -> Counter[int]:
    return Counter(Counter(it.group for it in items).values())


def test_groups_usr(data_dir: Path) -> None:
    for name, per in (("topical-usr", 6), ("persona-usr", 5), ("usr-topical", 6), ("usr-persona", 5)):
        items = bench(name, data_dir)
        # 60 distinct contexts with `per` rated responses each ...
        contexts = Counter(it.context for it in items)
        assert len(contexts) == 60 and set(contexts.values()) == {per}
        # ... every context's responses share one group ...
        by_context: dict[object, set[str | None]] = {}
        for it in items:
            by_context.setdefault(it.context, set()).add(it.group)
        assert all(len(g) == 1 for g in by_context.values())
    # ... but some contexts are earlier points of another context's conversation, so they merge.
    assert _group_sizes(bench("topical-usr", data_dir)) == {6: 49, 12: 4, 18: 1}
    assert _group_sizes(bench("persona-usr", data_dir)) == {5: 58, 10: 1}


def test_topical_overlap_shares_group(data_dir: Path) -> None:
    """The leak the prefix rule prevents: one TU context continues with another item's reference."""
    items = bench("topical-usr", data_dir)
    first = items[0]
    texts = [t.text for t in first.context]
    # Compare texts only: inferred speakers differ with the parity of the context length.
    longer = [i for i in items if [t.text for t in i.context[: len(texts)]] == texts and len(i.context) > len(texts)]
    assert longer
    assert longer[0].context[len(texts)].text == first.references[0]
    assert longer[0].group == first.group


def test_groups_gupta_and_fed(data_dir: Path) -> None:
    for name in ("dailydialog-gupta", "gupta-csv"):
        assert _group_sizes(bench(name, data_dir)) == {5: 100}
    # FED: 125 conversations x 3 turns; two Mitsuku conversations share their 3-turn context.
    assert _group_sizes(bench("fed-turn", data_dir)) == {3: 123, 6: 1}
    fed = bench("fed", data_dir)
    assert _group_sizes(fed) == {4: 123, 8: 1}  # each dialog joins its own three turns
    for i, it in enumerate(fed):
        if it.level == "turn":
            nxt = next(d for d in fed[i:] if d.level == "dialog")
            assert it.group == nxt.group


def test_dstc10_item_order(data_dir: Path) -> None:
    for name in ("topical-usr", "dailydialog-zhao", "fed-dial"):
        items = bench(name, data_dir)
        assert [i.id for i in items] == [f"{name}_{k:05d}" for k in range(len(items))]


def test_load_items_detects_formats(data_dir: Path) -> None:
    expect = {
        "dstc10_track5/fed-turn_eval.json": ("dstc10", "fed-turn"),
        "dstc10_track5/fed-dial_eval.json": ("dstc10-dial", "fed-dial"),
        "fed/fed_data.json": ("fed", "fed_data"),
        "usr/tc_usr_data.json": ("usr", "tc_usr_data"),
        "dailydialog_gupta/mturk_rating_processed_output.csv": ("gupta", "mturk_rating_processed_output"),
    }
    for rel, (fmt, _stem) in expect.items():
        assert detect_format(data_dir / rel) == fmt
    items = load_items(data_dir / "dstc10_track5/fed-dial_eval.json")
    assert len(items) == 125 and items[0].dataset == "fed-dial" and items[0].level == "dialog"
    assert load_items(data_dir / "usr/pc_usr_data.json", dataset="pc")[0].dataset == "pc"
    assert load_items(data_dir / "usr/pc_usr_data.json")[0].id == "persona-usr_00000"
    assert detect_format(EXAMPLES) == "jsonl"
    assert FORMATS == ("jsonl", "dstc10", "dstc10-dial", "fed", "usr", "gupta", "pandalm", "llmbar", "reliable-eval",
                       "engagement")


def test_load_benchmark_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        load_benchmark("TU", tmp_path)
    msg = str(e.value)
    assert "topical-usr_eval.json" in msg and str(tmp_path) in msg and "expects" in msg


def test_unknown_names(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError):
        load_benchmark("no-such-set", tmp_path)
    with pytest.raises(UnknownNameError):
        load_items(EXAMPLES, format="jsnl")
    with pytest.raises(InputError, match="file not found"):
        load_items(tmp_path / "missing.jsonl")


# --- benchmark-format errors --------------------------------------------------------------------


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


GOOD_DSTC10 = {"dialogue_id": "x_00000", "context": "a\nb", "response": "c", "model": "m", "annotations": {"overall": [1, 2]}}


@pytest.mark.parametrize(
    ("mutate", "field", "fragment"),
    [
        (lambda r: r.pop("response"), "response", "missing"),
        (lambda r: r.update(context=3), "context", "expected string"),
        (lambda r: r.update(annotations=[1]), "annotations", "expected object"),
        (lambda r: r.update(annotations={"overall": ["bad"]}), "annotations.overall", "expected a number"),
        (lambda r: r.update(annotations={"overall": [1, float("nan")]}), "annotations.overall", "finite"),
        (lambda r: r.update(reference=[1]), "reference[0]", "expected a string"),
        (lambda r: r.update(response=None), "response", "missing"),
    ],
)
def test_dstc10_record_errors(tmp_path: Path, mutate, field: str, fragment: str) -> None:
    record = json.loads(json.dumps(GOOD_DSTC10))
    mutate(record)
    path = _write(tmp_path, "bad_eval.json", json.dumps([GOOD_DSTC10 | {"dialogue_id": "x_0"}, record]))
    with pytest.raises(InputError) as e:
        load_items(path, format="dstc10")
    assert e.value.file == str(path) and e.value.field == field
    assert "#1" in str(e.value.record) and fragment in str(e.value)


def test_benchmark_n_a_strings_and_bools_dropped(tmp_path: Path) -> None:
    record = GOOD_DSTC10 | {"annotations": {"overall": [1, "N/A (no idea)", True, 3]}}
    items = load_items(_write(tmp_path, "x_eval.json", json.dumps([record])))
    assert items[0].annotations == {"overall": (1.0, 3.0)}


def test_benchmark_invalid_json_and_utf8(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="invalid JSON") as e:
        load_items(_write(tmp_path, "a.json", '[{"dialogue_id": "x",\n "context": }]'), format="dstc10")
    assert e.value.record == 2
    with pytest.raises(InputError, match="UTF-8"):
        load_items(_write(tmp_path, "b.json", b'[{"dialogue_id": "\xff"}]'), format="dstc10")
    with pytest.raises(InputError, match="no records"):
        load_items(_write(tmp_path, "c.json", "[]"), format="fed")
    with pytest.raises(InputError, match="JSON array"):
        load_items(_write(tmp_path, "c2.json", '{"a": 1}'), format="usr")
    with pytest.raises(InputError, match="cannot tell the format"):
        load_items(_write(tmp_path, "d.json", '[{"foo": 1}]'))


def test_fed_usr_gupta_record_errors(tmp_path: Path) -> None:
    fed = [{"context": "User: hi\nnot labelled", "response": "System: x", "system": "s", "annotations": {}}]
    with pytest.raises(InputError, match="label") as e:
        load_items(_write(tmp_path, "f.json", json.dumps(fed)), format="fed")
    assert e.value.field == "context"
    usr = [{"context": "a\nb", "fact": "", "responses": [{"response": "r", "model": "m", "Overall": ["x"]}]}]
    with pytest.raises(InputError) as e:
        load_items(_write(tmp_path, "u.json", json.dumps(usr)), format="usr")
    assert e.value.field == "responses[0].Overall" and e.value.record == "#0"
    header = "model,context_id,human_average_rating,response,prevgt,all_references,context\n"
    with pytest.raises(InputError) as e:
        load_items(_write(tmp_path, "g.csv", header + "m,1_2,high,resp,p,r1\tr2,a||||b\n"))
    assert e.value.field == "human_average_rating" and e.value.record == "row 1"
    with pytest.raises(InputError, match="missing CSV column"):
        load_items(_write(tmp_path, "h.csv", "model,response\nm,r\n"))
    with pytest.raises(InputError, match="expected 7 columns") as e:  # a row cut short
        load_items(_write(tmp_path, "s.csv", header + "m,1_2,3,resp,p,r1\tr2,a||||b\nm,1_3,3\n"))
    assert e.value.record == "row 2"
    with pytest.raises(InputError, match="no data rows"):
        load_items(_write(tmp_path, "e.csv", header))


# --- users' JSONL -------------------------------------------------------------------------------


def turn_record(**kw: object) -> dict[str, object]:
    record: dict[str, object] = {
        "id": "a",
        "context": [{"speaker": "user", "text": "hello"}, {"speaker": "bot", "text": "hi"}, {"speaker": "Human", "text": "how are you?"}],
        "response": "fine, thanks",
        "scores": {"overall": 3.0},
    }
    record.update(kw)
    return record


def test_jsonl_good(tmp_path: Path) -> None:
    lines = [
        json.dumps(turn_record(reference="ref", fact=" a fact ", next_user="ok", system="sys")),
        "",
        "   ",
        json.dumps(turn_record(id="b", reference=["r1", "r2"], scores={"overall": [1, 2.5], "fluency": []}, group="g1")),
        json.dumps({"id": "c", "dialog": [{"speaker": "user", "text": "x"}, {"speaker": "assistant", "text": "y"}], "scores": {"overall": 4}}),
        json.dumps(turn_record(id="d", context=[{"speaker": "user", "text": "hello"}])),
    ]
    items = load_items(_write(tmp_path, "mine.jsonl", "\n".join(lines) + "\n"))
    a, b, c, d = items
    assert a.context[1].speaker == SYSTEM and a.context[2].speaker == USER
    assert a.references == ("ref",) and a.fact == "a fact" and a.next_user == "ok" and a.system == "sys"
    assert a.dataset == "mine" and a.annotations == {"overall": (3.0,)}
    assert b.references == ("r1", "r2") and b.group == "g1" and b.human("overall") == 1.75
    assert b.human("fluency") is None
    assert c.level == "dialog" and c.response is None and c.context == () and len(c.dialog) == 2
    # "d"'s context is a prefix of "a"'s: same conversation, same automatic group.
    assert d.group == a.group and a.group != b.group


def test_jsonl_crlf_and_bom(tmp_path: Path) -> None:
    text = "\ufeff" + json.dumps(turn_record()) + "\r\n" + json.dumps(turn_record(id="b")) + "\r\n"
    assert len(load_items(_write(tmp_path, "w.jsonl", text))) == 2


E_CASES = [
    # (lines, line number, field or None, message fragment)
    ([json.dumps(turn_record()), '{"id": "b", '], 2, None, "invalid JSON"),
    ([], None, None, "no records"),
    (["", "  "], None, None, "no records"),
    ([json.dumps(turn_record()), "[1, 2]"], 2, None, "JSON object"),
    (["3"], 1, None, "JSON object"),
    ([json.dumps({k: v for k, v in turn_record().items() if k != "id"})], 1, "id", "missing"),
    ([json.dumps(turn_record(id=""))], 1, "id", "empty id"),
    ([json.dumps(turn_record(id=7))], 1, "id", "expected string"),
    ([json.dumps({"id": "a", "scores": {}})], 1, "response", "'dialog'"),
    ([json.dumps({"id": "a", "response": "x"})], 1, "context", "missing"),
    ([json.dumps(turn_record(response=None))], 1, "response", "missing"),
    ([json.dumps(turn_record(response=["x"]))], 1, "response", "expected string"),
    ([json.dumps(turn_record(context="hello"))], 1, "context", "array of turns"),
    ([json.dumps(turn_record(context=["hello"]))], 1, "context[0]", "turn object"),
    ([json.dumps(turn_record(context=[{"speaker": "user", "text": None}]))], 1, "context[0].text", "missing"),
    ([json.dumps(turn_record(context=[{"speaker": "user"}]))], 1, "context[0].text", "missing"),
    ([json.dumps(turn_record(context=[{"speaker": "user", "text": "x", "time": 3}]))], 1, "context[0].time", "unknown key"),
    ([json.dumps(turn_record(context=[{"speaker": "robot", "text": "x"}]))], 1, "context[0].speaker", "known speakers: " + ", ".join(KNOWN_SPEAKERS)),
    ([json.dumps({"id": "a", "dialog": []})], 1, "dialog", "empty dialog"),
    ([json.dumps({"id": "a", "dialog": [{"speaker": "alien", "text": "x"}]})], 1, "dialog[0].speaker", "unknown speaker"),
    ([json.dumps({"id": "a", "dialog": [{"speaker": "user", "text": "x"}], "response": "y"})], 1, "response", "dialog-level"),
    ([json.dumps(turn_record()), json.dumps(turn_record())], 2, "id", "line 1"),
    ([json.dumps(turn_record(scores={"overall": "high"}))], 1, "scores.overall", "expected a number"),
    ([json.dumps(turn_record(scores={"overall": [1, "2"]}))], 1, "scores.overall", "expected a number"),
    ([json.dumps(turn_record(scores={"overall": True}))], 1, "scores.overall", "expected a number"),
    ([json.dumps(turn_record(scores={"overall": None}))], 1, "scores.overall", "expected a number"),
    ([json.dumps(turn_record(scores={"overall": float("nan")}))], 1, "scores.overall", "finite"),
    ([json.dumps(turn_record(scores={"overall": [1, float("inf")]}))], 1, "scores.overall", "finite"),
    (['{"id": "a", "context": [], "response": "x", "scores": {"overall": 1e999}}'], 1, "scores.overall", "finite"),
    (['{"id": "a", "context": [], "response": "x", "scores": {"overall": 1' + "0" * 400 + "}}"], 1, "scores.overall", "too large"),
    ([json.dumps(turn_record(scores=[3]))], 1, "scores", "expected an object"),
    ([json.dumps(turn_record(respone="typo"))], 1, "respone", "allowed keys: id, context, response"),
    ([json.dumps(turn_record(reference=3))], 1, "reference", "string or an array"),
    ([json.dumps(turn_record(reference=["ok", 3]))], 1, "reference[1]", "expected a string"),
    ([json.dumps(turn_record(fact=["x"]))], 1, "fact", "expected string"),
    ([json.dumps(turn_record(group=" "))], 1, "group", "empty group"),
    ([json.dumps(turn_record(next_user=1))], 1, "next_user", "expected string"),
    (['{"id": "a", "context": [{"speaker": "user", "text": "\\ud800"}], "response": "x"}'], 1, "context[0].text", "lone surrogate"),
]


@pytest.mark.parametrize(("lines", "line", "field", "fragment"), E_CASES)
def test_jsonl_errors(tmp_path: Path, lines: list[str], line: int | None, field: str | None, fragment: str) -> None:
    path = _write(tmp_path, "bad.jsonl", "\n".join(lines) + ("\n" if lines else ""))
    with pytest.raises(InputError) as e:
        load_items(path)
    err = e.value
    assert err.file == str(path) and str(path) in str(err)
    assert err.record == line
    if line is not None:
        assert f"line {line}" in str(err)
    assert err.field == field
    if field is not None:
        assert f"field '{field}'" in str(err)
    assert fragment in str(err)


def test_jsonl_invalid_utf8_names_line(tmp_path: Path) -> None:
    content = (json.dumps(turn_record()) + "\n").encode() + b'{"id": "b\xc3\x28"}\n'
    with pytest.raises(InputError, match="UTF-8") as e:
        load_items(_write(tmp_path, "u.jsonl", content))
    assert e.value.record == 2


def test_jsonl_duplicate_names_both_lines(tmp_path: Path) -> None:
    lines = [json.dumps(turn_record(id="x")), json.dumps(turn_record(id="y")), "", json.dumps(turn_record(id="x"))]
    with pytest.raises(InputError) as e:
        load_items(_write(tmp_path, "d.jsonl", "\n".join(lines)))
    assert e.value.record == 4 and "line 1" in str(e.value) and "'x'" in str(e.value)


def test_jsonl_in_json_file_is_detected(tmp_path: Path) -> None:
    path = _write(tmp_path, "mine.json", json.dumps(turn_record()) + "\n")
    assert load_items(path)[0].id == "a"


# --- property-based: arbitrary text loads or raises InputError -----------------------------------

# Any code point, lone surrogates included (json.dumps escapes them as "\\udXXX"), plus tricky
# separators (U+2028, NEL, CR, tab, NUL) that line splitting or stripping could trip over.
_text = st.text(
    alphabet=st.one_of(st.characters(codec=None, exclude_categories=()), st.sampled_from("\u2028\x85\r\n\t\x00 ")),
    max_size=40,
)
_speaker = st.one_of(st.sampled_from(KNOWN_SPEAKERS), st.sampled_from(KNOWN_SPEAKERS).map(str.upper), _text)
_turns = st.lists(st.fixed_dictionaries({"speaker": _speaker, "text": _text}), max_size=4)
_json_value = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    item_id=_text,
    context=_turns,
    response=_text,
    reference=st.one_of(_text, st.lists(_text, max_size=3)),
    fact=_text,
    score=st.one_of(
        st.integers(1, 5), st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=3), _json_value
    ),
    dialog=st.booleans(),
    ascii_only=st.booleans(),
)
@pytest.mark.slow
def test_jsonl_arbitrary_text_loads_or_input_error(
    item_id, context, response, reference, fact, score, dialog, ascii_only
) -> None:
    if dialog:
        record = {"id": item_id, "dialog": context, "fact": fact, "scores": {"overall": score}}
    else:
        record = {"id": item_id, "context": context, "response": response, "reference": reference, "fact": fact, "scores": {"q": score}}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.jsonl"
        # ensure_ascii=False writes raw characters (a lone surrogate becomes invalid UTF-8).
        line = json.dumps(record, ensure_ascii=ascii_only) + "\n"
        path.write_bytes(line.encode("utf-8", "surrogatepass"))
        try:
            items = load_items(path)
        except InputError as e:
            assert e.file == str(path)
            return
    assert len(items) == 1 and items[0].id == item_id.strip()



@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_jsonl_arbitrary_bytes_loads_or_input_error(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.jsonl"
        path.write_bytes(content)
        try:
            load_items(path)
        except InputError:
            pass


_bench_value = st.one_of(
    _text,
    _json_value,
    _turns,
    st.dictionaries(_text, st.lists(st.integers(0, 5) | _json_value, max_size=3), max_size=2),
    st.lists(st.fixed_dictionaries({"response": _text, "model": _text}, optional={"Overall": _json_value}), max_size=2),
)
_bench_record = st.fixed_dictionaries(
    {},
    optional=dict.fromkeys(("dialogue_id", "context", "response", "reference", "fact", "model", "model_name", "annotations", "dialog", "system", "responses"), _bench_value),
)


@settings(max_examples=300, deadline=None, database=None)
@given(records=st.lists(_bench_record | _json_value, max_size=3), fmt=st.sampled_from(["dstc10", "fed", "usr"]))
@pytest.mark.slow
def test_benchmark_loaders_arbitrary_records(records, fmt: str) -> None:
    """Malformed benchmark records raise InputError, never KeyError/TypeError/AttributeError."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "b.json"
        path.write_text(json.dumps(records), encoding="utf-8")
        try:
            load_items(path, format=fmt)
        except InputError:
            pass


# --- scale check and examples -------------------------------------------------------------------


def test_check_scale(tmp_path: Path) -> None:
    items = load_items(_write(tmp_path, "s.jsonl", json.dumps(turn_record(scores={"Overall": [3, 7]})) + "\n"))
    with pytest.raises(InputError) as e:
        check_scale(items, OVERALL_1_5)
    assert e.value.record == "a" and e.value.field == "scores.Overall" and "[1, 5]" in str(e.value)
    check_scale(items, dataset_info("DZ").quality("content"))  # other quality: nothing to check


def test_blank_response_is_data(tmp_path: Path) -> None:
    """An empty or whitespace-only response loads as "" and is flagged (it was an error before)."""
    for raw in ("", "   ", "\n\t"):
        (item,) = load_items(_write(tmp_path, "e.jsonl", json.dumps(turn_record(response=raw)) + "\n"))
        assert item.response == "" and item.flags == ("empty_response",)
    record = dict(GOOD_DSTC10, response="System:  ")
    (item,) = load_items(_write(tmp_path, "e_eval.json", json.dumps([record])), format="dstc10")
    assert item.response == "" and item.flags == ("empty_response",)


def test_check_scale_on_benchmarks(data_dir: Path) -> None:
    for name, info in DATASETS.items():
        if not (data_dir / info.path).is_file():
            continue
        items = bench(name, data_dir)
        for q in info.qualities:
            check_scale([i for i in items if i.level == q.level], q)


def test_examples_load() -> None:
    items = load_items(EXAMPLES)
    assert len(items) == 12
    levels = Counter(i.level for i in items)
    assert levels == {"turn": 10, "dialog": 2}
    assert all(i.human("overall") is not None for i in items)
    check_scale(items, OVERALL_1_5)
    assert all(i.scales == {"overall": (1, 5)} for i in items)  # declared on the first line
    groups = Counter(i.group for i in items)
    assert sorted(n for n in groups.values() if n > 1) == [2, 2]
    assert any(i.references for i in items) and any(i.fact for i in items)
    for i in items:
        if i.level == "turn":
            assert 2 <= len(i.context) <= 4
