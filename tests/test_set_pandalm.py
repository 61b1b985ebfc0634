"""PandaLM's test set as a response-pair set: loaded by name, each record's two replies paired with the three
annotators' votes (ties allowed), halves by instruction, odd records kept and flagged, bad records refused by
file, record and field, and ``judge compare`` scoring the judge against the majority with the human-human
agreement beside it. Real data from ../shared/data; the mock backend for the command's path."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from judge.cli import main
from judge.core.errors import InputError
from judge.data.pairs import PairLabel, pairs_within
from judge.datasets import load_benchmark, load_items, resolve_source
from judge.datasets.benchmarks import dataset_info
from judge.datasets.split import conversation_of, split_items, split_of
from judge.records.pair_rows import PairOrder, PairRow
from judge.stats.pairwise import summarise_pairs

FILE = "pandalm/testset-v1.json"


@pytest.fixture(scope="module")
def pandalm(data_dir: Path) -> list:
    return load_benchmark("pandalm", data_dir)


def test_loads_by_name_and_alias_one_pair_per_record_with_the_three_votes(pandalm, data_dir):
    assert dataset_info("PL").name == dataset_info("PandaLM").name == "pandalm"
    records = json.loads((data_dir / FILE).read_text())
    pairing = pairs_within(pandalm, file="pandalm")
    assert len(pandalm) == 2 * len(records) == 1998 and len(pairing.pairs) == len(records)
    assert len({p.context for p in pairing.pairs}) == 170
    assert sorted(pairing.systems) == ["bloom-7b", "cerebras-gpt-6.7B", "llama-7b", "opt-7b", "pythia-6.9b"]
    side = {0: "tie", 1: "a", 2: "b"}
    for pair, rec in zip(pairing.pairs, records, strict=True):
        assert (pair.system_a, pair.system_b) == tuple(rec["cmp_key"].split("_"))
        assert pair.a.id == f"pandalm_{rec['idx']:04d}_1" and pair.b.id == f"pandalm_{rec['idx']:04d}_2"
        assert pair.label == PairLabel(tuple(side[rec[f"annotator{k}"]] for k in (1, 2, 3)), "annotators")
    # The label is the majority; a tie is a label of its own (every record has a majority).
    assert Counter(p.label.side for p in pairing.pairs) == {"b": 472, "a": 422, "tie": 105}
    assert PairLabel(("a", "b", "tie")).side is None and PairLabel(("tie", "tie", "a")).side == "tie"
    # The votes are the items' ratings too: 1 the preferred reply, 0 the other, 0.5 each for a tie.
    assert pandalm[0].annotations["preferred"] == (0.0, 0.0, 0.0) and pandalm[1].annotations["preferred"] == (1.0,) * 3


def test_odd_records_are_kept_and_flagged(pandalm):
    by_id = {it.id: it for it in pandalm}
    true = by_id["pandalm_0157_1"]  # a model answered "True", stored as the JSON value true
    assert true.response == "True" and "response1 is the JSON value true" in str(true.meta["odd"])
    blank = by_id["pandalm_0466_1"]  # a blank instruction: the input alone is the prompt
    assert blank.context[0].text == "Truthfulness" and "instruction is blank" in str(blank.meta["odd"])
    empty = [it for it in pandalm if not it.response.strip()]
    assert len(empty) == 54 and all("empty_response" in it.flags for it in empty)


def test_the_same_instruction_never_lands_in_both_halves(pandalm):
    dev, test = split_items(pandalm, "dev"), split_items(pandalm, "test")
    assert len(dev) + len(test) == len(pandalm) and 0.4 < len(dev) / len(pandalm) < 0.6
    half = {}
    for it in pandalm:
        assert half.setdefault(it.context[0].text, split_of(conversation_of(it))) == split_of(conversation_of(it))
    # Both replies of a pair, and every pair of an instruction, are in one half: pairing a half loses none.
    assert len(pairs_within(dev, file="pandalm").pairs) + len(pairs_within(test, file="pandalm").pairs) == 999
    # Named by the instruction's text, not by a registered dialogue's.
    assert all(conversation_of(it).startswith("conv:") for it in pandalm)


def test_a_copy_given_by_path_is_read_the_same_and_keeps_its_halves(pandalm, data_dir, tmp_path):
    copy = tmp_path / "mine.json"
    copy.write_bytes((data_dir / FILE).read_bytes())
    src = resolve_source(str(copy))
    assert src.info.name == "pandalm" and src.info.overall == "preferred"
    assert [split_of(conversation_of(it)) for it in src.items] == [split_of(conversation_of(it)) for it in pandalm]


RECORD = {"idx": 0, "motivation_app": "x", "cmp_key": "a-1_b-2", "instruction": "Say hi.", "input": "",
          "response1": "hi", "response2": "hello", "annotator1": 1, "annotator2": 0, "annotator3": 2}


@pytest.mark.parametrize("change, record, field, message", [
    ({"annotator2": 3}, "#0 (idx 0)", "annotator2", r"expected 0 \(tie\), 1 \(the first reply\) or 2"),
    ({"annotator1": "1"}, "#0 (idx 0)", "annotator1", "expected number, got string"),
    ({"response2": None}, "#0 (idx 0)", "response2", "missing required field"),
    ({"response1": 3}, "#0 (idx 0)", "response1", "expected string"),
    ({"cmp_key": "onlyone"}, "#0 (idx 0)", "cmp_key", "expected the two systems compared as 'x_y'"),
    ({"instruction": " ", "input": ""}, "#0 (idx 0)", "instruction", "an empty instruction and no input"),
    ({"idx": "0"}, "#0", "idx", "expected number"),
])
def test_bad_records_name_the_file_record_and_field(tmp_path, change, record, field, message):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps([{**RECORD, **change}]))
    with pytest.raises(InputError, match=message) as exc:
        load_items(bad, format="pandalm")
    assert (exc.value.file, exc.value.record, exc.value.field) == (str(bad), record, field)


def test_a_repeated_idx_is_refused(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps([RECORD, {**RECORD, "response1": "yo"}]))
    with pytest.raises(InputError, match="idx 0 is also record #0's") as exc:
        load_items(bad)  # the format is told from the keys
    assert exc.value.record == "#1 (idx 0)"


def _row(votes, label, orders, winner, group="g1"):
    return PairRow(id="x", method="m", quality=None, context=group, group=group, system_a="s", system_b="t",
                   item_a="x1", item_b="x2", human_a=None, human_b=None, preference=0.5, winner=winner,
                   consistent=len(set(orders)) == 1, tie=None,
                   orders=tuple(PairOrder(o, 0.5, w, {}) for o, w in zip(("ab", "ba"), orders)), length_a=1,
                   length_b=2, flags=(), estimated=False, complete=True, error=None, n_prompt_tokens=0, label=label,
                   label_kind="annotators", votes=tuple(votes))


def test_accuracy_ties_and_the_human_human_ceiling_are_computed_as_documented():
    rows = [_row(["a", "a", "a"], "a", ["a", "a"], "a", "g1"),        # right in both orders
            _row(["b", "b", "tie"], "b", ["a", "b"], "tie", "g2"),    # right in one order; orders disagree
            _row(["tie", "tie", "a"], "tie", ["a", "a"], "a", "g3"),  # a tie label: only a tie verdict matches
            _row(["a", "b", "tie"], None, ["a", "a"], "a", "g4")]     # no majority: left out of the accuracy
    lab = summarise_pairs(rows, n_boot=50)["labels"]
    assert (lab["n_labelled"], lab["n_tie_labels"], lab["n_without_majority"]) == (3, 1, 1)
    assert lab["accuracy"]["value"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert lab["decided"]["value"] == pytest.approx(0.75) and lab["decided"]["n"] == 2
    assert lab["both_orders"]["value"] == pytest.approx(1 / 3)
    assert lab["positional_agreement"]["value"] == pytest.approx(2 / 3)
    assert lab["verdict"]["value"] == pytest.approx(1 / 3)
    # Human-human: per pair the share of the three annotator pairs that agree (1, 1/3, 1/3, 0), over all voted pairs;
    # judge-human: the share of annotators the verdict equals (1, 1/3, 1/3, 1/3).
    assert lab["human_human"]["value"] == pytest.approx((1 + 1 / 3 + 1 / 3 + 0) / 4)
    assert lab["judge_human"]["value"] == pytest.approx((1 + 1 / 3 + 1 / 3 + 1 / 3) / 4)
    plain = [replace(r, label=None, label_kind=None, votes=None) for r in rows]
    assert summarise_pairs(plain, n_boot=10)["labels"] is None  # a set without pair labels has no such figures


def test_compare_reports_accuracy_against_the_majority_with_the_ceiling_beside(data_dir, tmp_path, capsys):
    out = tmp_path / "pl.jsonl"
    assert main(["compare", "--dataset", "PL", "--data-dir", str(data_dir), "--split", "dev", "--limit", "3",
                 "--backend", "mock", "--against", "none", "--no-progress", "--bootstrap", "50", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "labels    accuracy against the annotators' majority" in printed
    assert "human-human agreement" in printed and "(3 annotators, the ceiling) beside judge-human" in printed
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(r["label_kind"] == "annotators" and len(r["votes"]) == 3 for r in rows)
    assert all(r["label"] == PairLabel(tuple(r["votes"])).side for r in rows)
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["labels"]["n_labelled"] == len(rows) and summary["labels"]["human_human"]["value"] > 0.5
    assert "judges " not in printed  # no published judges for PandaLM


def test_systems_and_baseline_choose_among_the_records_pairs(pandalm):
    both = pairs_within(pandalm, file="pandalm", systems=["llama-7b", "opt-7b"]).pairs
    assert len(both) == 106 and {(p.system_a, p.system_b) for p in both} == {("llama-7b", "opt-7b")}
    with_llama = pairs_within(pandalm, file="pandalm", baseline="llama-7b").pairs
    assert len(with_llama) == 111 + 110 + 106 + 94 and all("llama-7b" in (p.system_a, p.system_b) for p in with_llama)
    with pytest.raises(InputError, match="no item of the file is by system 'gpt-4'"):
        pairs_within(pandalm, file="pandalm", baseline="gpt-4")


def test_one_order_per_pair_gives_accuracy_but_no_positional_figures():
    rows = [replace(_row(["a"], "a", [v], "a", f"g{i}"), label_kind="gold") for i, v in enumerate("aab")]
    lab = summarise_pairs(rows, n_boot=20)["labels"]
    assert lab["kind"] == "gold" and lab["accuracy"]["value"] == pytest.approx(2 / 3)
    assert lab["both_orders"] is None and lab["positional_agreement"] is None and "human_human" not in lab
