"""Benchmark sources by name or path, declared scales, the whole DSTC10 release, and empty responses.

Real files throughout: the shared benchmark data, and small fixtures under tests/fixtures/ in the
exact shapes of the two DSTC10 files this project does not hold (persona-zhao, convai2-grade).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from judge.core.errors import InputError, UnknownNameError
from judge.data.qualities import QUALITY_GROUPS, quality_for
from judge.datasets import (
    check_scale,
    load_benchmark,
    load_items,
    parse_scale,
    resolve_source,
)
from judge.datasets.benchmarks import DATASETS, DSTC10_SETS, dataset_info
from judge.datasets.download import DATA_FILES
from judge.prompts.templates import get_prompt

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RATED = FIXTURES / "rated_0to2.jsonl"


# --- the two DSTC10 sets beyond the paper's eight ------------------------------------------------


@pytest.mark.parametrize("name,abbrev,n,key", [("persona-zhao", "PZ", 12, "appropriateness"),
                                                ("convai2-grade", "CG", 6, "relevance")])
def test_pz_and_cg_load_by_name_and_abbreviation(name: str, abbrev: str, n: int, key: str) -> None:
    by_name = load_benchmark(name, FIXTURES)
    by_abbrev = load_benchmark(abbrev, FIXTURES)
    assert [it.id for it in by_name] == [f"{name}_{i:05d}" for i in range(n)]
    assert by_name == by_abbrev
    info = dataset_info(abbrev.lower())
    assert (info.name, info.overall, info.quality(key).min, info.quality(key).max) == (name, key, 1, 5)
    assert all(it.human(key) is not None for it in by_name)
    check_scale(by_name, info.quality(key))
    source = resolve_source(abbrev, FIXTURES)
    assert source.registered and source.quality.name == key and len(source.items) == n


def test_pz_keeps_references_and_cg_reads_model_name() -> None:
    pz = load_benchmark("PZ", FIXTURES)
    assert pz[1].references == ("it was great , i went hiking with my dog .",)
    assert pz[0].system == "ground-truth" and len(pz[6].context) == 5
    assert {it.group for it in pz[:6]} != {it.group for it in pz[6:]}
    cg = load_benchmark("CG", FIXTURES)
    assert [it.system for it in cg[:2]] == ["bert_ranker", "transformer_generator"]
    assert cg[0].references == () and cg[0].human("relevance") == pytest.approx(4.5)


def test_release_files_are_pinned_and_the_paper_sets_stay_eight() -> None:
    files = {f.path: f for f in DATA_FILES}
    eight = files["dstc10_track5/fed-turn_eval.json"]
    for name, sha in (("persona-zhao", "f4ff1886b08979bd2a0d24ba0a46fdf1cb2d0cf46d242bd9e6e3ba6ae039c86e"),
                      ("convai2-grade", "ea7f44fd347b2bc40e862c39f2fd54e4d1c4cfc2aa372c217d02623f60e518ac")):
        f = files[f"dstc10_track5/{name}_eval.json"]
        assert (f.source.repo, f.source.commit, f.source.sha256) == (eight.source.repo, eight.source.commit, sha)
        assert f.source.url.endswith(f"/dev_dataset/{name}_eval.json")
        assert DATASETS[name].path == f.path
    assert len(DSTC10_SETS) == 8 and "persona-zhao" not in DSTC10_SETS and "convai2-grade" not in DSTC10_SETS


# --- sources by path ----------------------------------------------------------------------------


def test_users_jsonl_with_declared_scale() -> None:
    source = resolve_source(RATED)
    assert not source.registered
    assert source.info.name == "rated_0to2" and source.info.overall == "overall"
    assert (source.quality.min, source.quality.max) == (0, 2)
    assert len(source.items) == 8 and source.annotated == ("overall",)
    # A declaration on line 1 holds for every line of the file.
    assert all(it.scales == {"overall": (0.0, 2.0)} for it in source.items)
    # Passed scales override the file's.
    wider = resolve_source(RATED, scales={"overall": (0, 4)}, name="mine")
    assert (wider.quality.max, wider.info.name) == (4, "mine")


def test_scales_passed_override_and_are_checked() -> None:
    with pytest.raises(InputError) as info:
        resolve_source(RATED, scales={"overall": (1, 2)})
    assert info.value.file == str(RATED) and info.value.field == "scores.overall" and "outside" in str(info.value)


def test_dstc10_file_under_an_unregistered_name(tmp_path: Path) -> None:
    path = tmp_path / "mychat_eval.json"
    shutil.copy(FIXTURES / "dstc10_track5" / "convai2-grade_eval.json", path)
    with pytest.raises(InputError) as info:
        resolve_source(path)  # its only quality is 'relevance', but nobody said on which scale
    assert info.value.file == str(path) and "--scale relevance=MIN:MAX" in str(info.value)
    source = resolve_source(path, scales={"relevance": (1, 5)})
    assert (source.info.name, source.info.format, source.info.overall) == ("mychat", "dstc10", "relevance")
    assert [it.dataset for it in source.items] == ["mychat"] * 6
    # A registered file name in its registered format is that set, read by path.
    same = resolve_source(FIXTURES / "dstc10_track5" / "convai2-grade_eval.json")
    assert same.registered and same.info.abbrev == "CG" and same.quality.max == 5


def test_quality_choice(tmp_path: Path, data_dir: Path) -> None:
    two = tmp_path / "two.jsonl"
    rec = {"id": "a", "context": [], "response": "hi", "scores": {"fluent": 1, "kind": 2},
           "scales": {"fluent": [0, 2], "kind": [1, 3]}}
    two.write_text(json.dumps(rec) + "\n")
    with pytest.raises(InputError) as info:
        resolve_source(two)
    assert "fluent, kind" in str(info.value) and info.value.field == "quality"
    assert resolve_source(two, quality="kind").quality.max == 3
    with pytest.raises(InputError, match="the file rates: fluent, kind"):
        resolve_source(two, quality="overall")
    assert resolve_source("DZ", data_dir, quality="grammar").quality.name == "grammar"
    with pytest.raises(InputError, match="data_dir"):
        resolve_source("DZ")
    with pytest.raises(InputError, match="neither a file nor a registered"):
        resolve_source(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("text,expected", [("overall=0:2", ("overall", (0.0, 2.0))),
                                           (" Maintains Context = 1 : 3 ", ("Maintains Context", (1.0, 3.0))),
                                           ("x=-1.5:2.5", ("x", (-1.5, 2.5)))])
def test_parse_scale(text: str, expected: tuple) -> None:
    assert parse_scale(text) == expected


@pytest.mark.parametrize("text", ["overall", "overall=2", "overall=a:b", "=0:2", "overall=2:0", "overall=1:1",
                                  "overall=0:inf", "overall=0:1:2"])
def test_parse_scale_refuses_bad_text(text: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scale(text)
    assert info.value.field == "--scale"


# --- scales are declared, never guessed ---------------------------------------------------------


def jsonl(tmp_path: Path, *records: dict) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def rec(i: int, **extra: object) -> dict:
    return {"id": f"x{i}", "context": [{"speaker": "user", "text": f"question {i}"}], "response": "answer", **extra}


def test_undeclared_user_quality_has_no_scale(tmp_path: Path) -> None:
    items = load_items(jsonl(tmp_path, rec(0, scores={"overall": 2, "Engaging": 5})))
    overall = quality_for("overall", items, "turn", strict=False)
    assert not overall.has_scale and math.isnan(overall.min)  # not silently 1-5
    engaging = quality_for("engaging", items, "turn", strict=False)
    assert not engaging.has_scale  # not FED's 0-2 ...
    assert engaging.description == next(q for q in QUALITY_GROUPS["fed-turn"] if q.name == "Engaging").description  # ... only its words
    with pytest.raises(InputError, match="--scale overall=MIN:MAX"):
        quality_for("overall", items, "turn")
    with pytest.raises(InputError, match="range"):
        check_scale(items, overall)
    with pytest.raises(InputError, match="example labels"):
        get_prompt("yesno").example_label(items[0], engaging)
    with pytest.raises(UnknownNameError):
        quality_for("no-such-quality", items, "turn", strict=False)
    declared = quality_for("engaging", {"Engaging": (1, 5)}, "turn")
    assert (declared.min, declared.max) == (1, 5)
    assert get_prompt("yesno").example_label(items[0], quality_for("Engaging", {"engaging": (1, 5)})) == "Yes"


def test_registered_sets_keep_their_scales(data_dir: Path) -> None:
    items = load_benchmark("TU", data_dir)
    known = dataset_info("TU").qualities
    assert quality_for("Engaging", items, "turn", known=known).max == 3  # USR's 1-3, not FED's 0-2
    assert quality_for("Engaging", {"engaging": (0, 10)}, "turn", known=known).max == 10  # declared wins


def test_jsonl_declared_scale_errors(tmp_path: Path) -> None:
    cases = [
        ((rec(0, scales={"overall": [0, 2]}, scores={"overall": 1}), rec(1, scores={"overall": 3})),
         2, "scores.overall", "outside the declared overall scale [0, 2]"),
        ((rec(0, scales={"overall": [0, 2]}), rec(1, scales={"Overall": [1, 5]})),
         2, "scales.Overall", "disagrees with [0, 2] declared on line 1"),
        ((rec(0, scales={"overall": [2, 0]}),), 1, "scales.overall", "MIN < MAX"),
        ((rec(0, scales={"overall": 5}),), 1, "scales.overall", "expected [min, max]"),
        ((rec(0, scales={"overall": ["0", 2]}),), 1, "scales.overall", "expected a number"),
        ((rec(0, scales=[0, 2]),), 1, "scales", "expected an object"),
    ]
    for records, line, field, fragment in cases:
        path = jsonl(tmp_path, *records)
        with pytest.raises(InputError) as info:
            load_items(path)
        err = info.value
        assert (err.file, err.record, err.field) == (str(path), line, field), str(err)
        assert fragment in str(err)


# --- empty responses are data -------------------------------------------------------------------


def test_empty_responses_load_in_every_loader(tmp_path: Path, data_dir: Path) -> None:
    items = load_items(RATED)
    assert [it.flags for it in items].count(("empty_response",)) == 2
    assert items[1].response == "" and items[4].response == "" and items[0].flags == ()
    pz = load_benchmark("PZ", FIXTURES)
    cg = load_benchmark("CG", FIXTURES)
    assert pz[3].flags == ("empty_response",) and cg[4].flags == ("empty_response",)
    # The original-release loaders too (USR, Gupta CSV, FED).
    usr = json.loads((data_dir / "usr" / "pc_usr_data.json").read_text(encoding="utf-8"))[:1]
    usr[0]["responses"][0]["response"] = "  "
    (tmp_path / "pc.json").write_text(json.dumps(usr))
    assert [it.flags for it in load_items(tmp_path / "pc.json")].count(("empty_response",)) == 1
    lines = (data_dir / "dailydialog_gupta" / "mturk_rating_processed_output.csv").read_text().splitlines(True)[:2]
    head, row = lines
    fields = row.split(",", 4)
    (tmp_path / "g.csv").write_text(head + ",".join(fields[:3] + ['""', fields[4]]))
    assert load_items(tmp_path / "g.csv")[0].flags == ("empty_response",)
    fed = [r for r in json.loads((data_dir / "fed" / "fed_data.json").read_text()) if "response" in r][:1]
    fed[0]["response"] = "System: "
    (tmp_path / "fed_data.json").write_text(json.dumps(fed))
    assert load_items(tmp_path / "fed_data.json", format="fed")[0].flags == ("empty_response",)


@pytest.mark.parametrize("prompt", ["yesno", "rating", "fed-turn-overall", "fed-turn-relevant"])
def test_templates_show_an_empty_response_as_empty(prompt: str) -> None:
    items = load_items(RATED)
    template = get_prompt(prompt)
    quality = quality_for("overall", items, "turn")
    for empty in (items[1], items[4]):
        text = template.render(empty, [(items[2], "Yes"), (empty, "No")], quality)
        assert text.count("Response: (empty response)\n") == 2, text
    full = template.render(items[0], [], quality)
    assert "Response: Try a thriller; they make hours disappear.\n" in full and "(empty response)" not in full


def test_malformed_input_is_still_refused(tmp_path: Path) -> None:
    for record, field in ((rec(0, response=None), "response"), (rec(0, response=3), "response")):
        path = jsonl(tmp_path, record)
        with pytest.raises(InputError) as info:
            load_items(path)
        assert (info.value.record, info.value.field) == (1, field)
