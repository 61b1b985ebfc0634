"""LLMBar's seven sets as response-pair sets with a gold label, and the paper's judges beside ours: the anchors
read from the release's statistics.json files (committed as judge/datasets/published_judges.json and equal to
what the files give), ``judge compare`` printing them beside its own row, and a ``judge run`` with two judges
(the second standing for a hosted one) putting both in the leaderboard's table. Real data from ../shared/data;
the mock backend for the command paths; SmolLM2 once on two pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.cli import main
from judge.core.errors import InputError
from judge.data.pairs import PairLabel, pairs_within
from judge.datasets import load_benchmark, load_items
from judge.datasets.benchmarks import DATASETS, dataset_info
from judge.datasets.download import DATA_FILES
from judge.datasets.published_judges import JUDGES_FILE, published_judges, read_judges, read_statistics
from judge.datasets.split import conversation_of, split_of
from judge.records.pair_rows import LABEL_ROW_KEYS, PAIR_ROW_KEYS
from judge.report.pairwise import anchor_rows

SETS = {"llmbar-natural": ("LBN", 100), "llmbar-gptinst": ("LBGI", 92), "llmbar-gptout": ("LBGO", 47),
        "llmbar-manual": ("LBM", 46), "llmbar-neighbor": ("LBNB", 134), "llmbar-faireval": ("LBFE", 66),
        "llmbar-llmeval2": ("LBL2", 200)}


@pytest.mark.parametrize("name", sorted(SETS))
def test_each_set_loads_by_name_and_alias_with_its_gold_labels(data_dir, name):
    abbrev, n = SETS[name]
    assert dataset_info(abbrev).name == name
    records = json.loads((data_dir / DATASETS[name].path).read_text())
    pairs = pairs_within(load_benchmark(abbrev, data_dir), file=name).pairs
    assert len(records) == len(pairs) == n
    for pair, rec in zip(pairs, records, strict=True):
        assert pair.label == PairLabel(({1: "a", 2: "b"}[rec["label"]],), "gold")
        assert (pair.a.response, pair.b.response) == (rec["output_1"], rec["output_2"])
        assert (pair.system_a, pair.system_b) == ("output_1", "output_2")


def test_an_instruction_two_sets_share_is_in_one_half_and_odd_pairs_are_flagged(data_dir):
    items = {n: load_benchmark(n, data_dir) for n in SETS}
    halves: dict[str, set[str]] = {}
    for its in items.values():
        for it in its:
            halves.setdefault(it.context[0].text, set()).add(split_of(conversation_of(it)))
    assert all(len(h) == 1 for h in halves.values())
    shared = [t for t in halves if sum(any(it.context[0].text == t for it in its) for its in items.values()) > 1]
    # GPTInst and Neighbor share a poem about FOSS, FairEval and LLMEval2 a question about vaccines.
    assert len(shared) == 2 and any(t.startswith("Could you please write a poem about the future of FOSS") for t in shared)
    # LLMEval2 holds a pair whose two outputs are one text (same_reply in its row) and an empty output: both kept.
    same = [p for p in pairs_within(items["llmbar-llmeval2"], file="x").pairs if p.a.response == p.b.response]
    assert len(same) == 1
    assert [it.id for it in items["llmbar-llmeval2"] if "empty_response" in it.flags] == [
        it.id for it in items["llmbar-llmeval2"] if not it.response.strip()] != []


def test_the_files_are_downloadable_from_the_release():
    urls = {f.path: f.source.url for f in DATA_FILES}
    assert urls["llmbar/Natural/dataset.json"] == ("https://raw.githubusercontent.com/princeton-nlp/LLMBar/"
                                                   "900616bff90b6c6c8e1681f7d079250637c55992/Dataset/LLMBar/Natural/dataset.json")
    assert urls["pandalm/testset-v1.json"].endswith("/WeOpenML/PandaLM/3871806e72b4832f815ecafd24d3503c73403f48/"
                                                    "data/testset-v1.json")


@pytest.mark.parametrize("change, field, message", [
    ({"label": 3}, "label", "expected 1 .output_1 is better. or 2"),
    ({"label": True}, "label", "expected number, got boolean"),
    ({"output_2": None}, "output_2", "missing required field"),
    ({"input": "  "}, "input", "an empty instruction"),
])
def test_bad_records_name_the_file_record_and_field(tmp_path, change, field, message):
    bad = tmp_path / "d.json"
    good = {"input": "Say hi.", "output_1": "hi", "output_2": "no", "label": 1}
    bad.write_text(json.dumps([good, {**good, **change}]))
    with pytest.raises(InputError, match=message) as exc:
        load_items(bad)  # told from the keys: llmbar
    assert (exc.value.file, exc.value.record, exc.value.field) == (str(bad), "#1", field)


def test_the_published_judges_are_what_the_release_files_say(data_dir):
    """The committed anchors equal what the reader gives from the release; each figure is the file's own
    (checked here against the file's text by another route than the reader's)."""
    assert json.loads(JUDGES_FILE.read_text()) == read_judges(data_dir)
    natural = published_judges("llmbar-natural")
    assert len(natural) == 65 and {r["judge"] for r in natural} == {"GPT-4", "ChatGPT", "ChatGPT-0301", "PaLM2",
                                                                     "LLaMA2", "Falcon"}
    assert {n: len(published_judges(n)) for n in SETS} == {**dict.fromkeys(SETS, 65), "llmbar-faireval": 8,
                                                          "llmbar-llmeval2": 8}
    for row in natural:
        raw = json.loads((data_dir / "llmbar/Natural/evaluators" / row["judge"] / row["strategy"] /
                          "statistics.json").read_text())
        assert row["accuracy"] == pytest.approx(float(raw["correct_average"].rstrip("%")) / 100)
        assert row["positional_agreement"] == pytest.approx(float(raw["equal"].split("=")[1].strip().rstrip("%")) / 100)
        assert row["n"] == 100
    assert published_judges("pandalm") == []


@pytest.mark.parametrize("text, field", [('{"correct_average": "9x%", "correct_both": "1 / 2 = 50%", "equal": "50%"}',
                                          "correct_average"),
                                         ('{"correct_average": "50%", "equal": "50%"}', "correct_both")])
def test_a_bad_statistics_file_is_named(tmp_path, text, field):
    bad = tmp_path / "statistics.json"
    bad.write_text(text)
    with pytest.raises(InputError) as exc:
        read_statistics(bad)
    assert (exc.value.file, exc.value.field) == (str(bad), field)


def test_compare_prints_this_judge_beside_the_papers(data_dir, capsys, tmp_path):
    out = tmp_path / "r.jsonl"
    assert main(["compare", "--dataset", "LBGO", "--data-dir", str(data_dir), "--backend", "mock", "--limit", "6",
                 "--against", "none", "--no-progress", "--bootstrap", "50", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "labels    accuracy against the gold label" in printed and "positional agreement" in printed
    table = printed[printed.index("judges   this one beside the LLMBar paper's"):].splitlines()
    assert table[2].startswith("  pairwise (mock)") and "ours: prompt pairwise, both orders" in table[2]
    gpt4 = [r for r in published_judges("llmbar-gptout") if r["judge"] == "GPT-4"]
    plain = next(r for r in gpt4 if r["strategy"] == "Vanilla")
    assert any(line.split()[:3] == ["GPT-4", "Vanilla", f"{plain['accuracy']:.3f}"] for line in table)
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [list(r) for r in rows] == [[*PAIR_ROW_KEYS, *LABEL_ROW_KEYS]] * 6  # the documented row, then the label
    # The accuracy is each order's verdict against the label, averaged over both orders.
    per_order = [sum(o["winner"] == r["label"] for o in r["orders"]) / 2 for r in rows]
    assert summary["labels"]["accuracy"]["value"] == pytest.approx(sum(per_order) / len(rows), abs=1e-6)
    assert summary["labels"]["positional_agreement"]["value"] == pytest.approx(
        sum(r["consistent"] for r in rows) / len(rows), abs=1e-6)


HOSTED = """
name = "two-judges"
data_dir = "{data}"
datasets = ["LBGO", "LBM"]
split = "test"

[[compare]]
name = "local"
backend = "mock"
against = "none"
contexts = 5

[[compare]]
name = "hosted"
backend = "mock"
prompt = "pairwise-tie"
against = "none"
contexts = 5
datasets = ["LBGO"]
"""


def test_a_run_with_two_judges_puts_both_in_the_table_beside_the_papers(data_dir, tmp_path):
    """Every cell of a run on a labelled set is a row of that set's table, above the published judges: a
    hosted judge given through the OpenAI backend is one more [[compare]] cell (the mock backend stands for it
    here: the table's path is the same)."""
    config = tmp_path / "c.toml"
    config.write_text(HOSTED.format(data=data_dir))
    out = tmp_path / "out"
    assert main(["run", str(config), "-o", str(out), "--no-progress"]) == 0
    board = (out / "leaderboard.md").read_text()
    section = board[board.index("## Against the pairs' labels"):]
    gptout = section[section.index("### LBGO"):section.index("### LBM")].splitlines()
    ours = [line for line in gptout if "| ours:" in line]
    assert [line.split(" | ")[0] for line in ours] == ["| local (mock)", "| hosted (mock)"]
    first_published = next(i for i, line in enumerate(gptout) if line.startswith("| ChatGPT |"))
    assert all(gptout.index(line) < first_published for line in ours)
    assert len([line for line in gptout if line.startswith("| ") and "ours:" not in line]) - 2 == 65
    assert "Against the pairs' labels" in (out / "leaderboard.html").read_text()
    csv = (out / "pairwise.csv").read_text()
    assert "label_accuracy" in csv and "label_positional_agreement" in csv and "label_human_human" not in csv
    summary = json.loads((out / "summary.json").read_text())
    assert {(e["name"], e["abbrev"]) for e in summary["pairwise"]} == {("local", "LBGO"), ("local", "LBM"),
                                                                       ("hosted", "LBGO")}
    assert anchor_rows([], published_judges("llmbar-manual"))[0][0] == "ChatGPT"


@pytest.mark.slow  # SmolLM2 on one pair, both orders (a few seconds)
def test_smollm2_judges_a_pair_and_lands_beside_the_papers(data_dir, capsys):
    assert main(["compare", "--dataset", "LBGO", "--data-dir", str(data_dir), "--limit", "1", "--against", "none",
                 "--threads", "2", "--no-cache", "--no-progress", "--bootstrap", "20"]) == 0
    printed = capsys.readouterr().out
    assert "model smollm2 (embedded) (llamacpp)" in printed
    row = next(line for line in printed.splitlines() if "ours: prompt pairwise" in line)
    assert row.split()[-1] == "1"  # one pair compared, beside the paper's 47
    assert "GPT-4" in printed


def _section_commands() -> list[list[str]]:
    """The ``judge compare`` commands of docs/pairwise.md's "Sets with a human preference per pair"."""
    import shlex

    text = (Path(__file__).resolve().parents[1] / "docs" / "pairwise.md").read_text(encoding="utf-8")
    section = text.split("## Sets with a human preference per pair", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("judge compare")]


def test_the_documented_commands_run(data_dir, capsys, monkeypatch):
    """The section's commands as written, on the mock backend (the first two; the judge runs with SmolLM2
    above), and the hosted one with --check: what it would send and cost, without sending anything."""
    commands = _section_commands()
    assert [c[:2] for c in commands] == [["compare", "--dataset"]] * 3
    local = [[str(data_dir) if a == "../shared/data" else a for a in c] for c in commands]
    for args in local[:2]:
        assert main([*args, "--backend", "mock", "--no-progress", "--bootstrap", "50"]) == 0
        assert "labels    accuracy against" in capsys.readouterr().out
    monkeypatch.setenv("OPENAI_API_KEY", "")
    assert main([*local[2], "--check", "--limit", "3"]) == 0
    assert "pairwise (3 pairs)" in capsys.readouterr().out
