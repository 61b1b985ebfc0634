"""Reliable-Eval (Ji et al. 2022) and PredictiveEngagement (Ghazarian et al. 2020): registered, loaded with the
usual guarantees, their conversations named so that the halves of the sets registered before stay."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from judge.cli import main
from judge.core.errors import InputError
from judge.data.qualities import oriented
from judge.datasets import detect_format, load_benchmark, load_items
from judge.datasets.benchmarks import DATASETS, dataset_info
from judge.datasets.conversations import DIGEST_SETS, conversation_names, load_unidentified
from judge.datasets.download import DATA_FILES
from judge.datasets.identity import index_digest
from judge.datasets.reliable_eval import QUALITY_CONTROL
from judge.stats.correlation import group_means
from judge.stats.system_level import rank_of, replication, system_agreement

ROOT = Path(__file__).resolve().parents[1]

RE_SETS = {"reliable-eval-free1": (1290, "RE1"), "reliable-eval-free2": (996, "RE2"), "reliable-eval-ice": (1224, "REI")}
PE_SETS = {"engagement-dailydialog": (1800, "PED", (1, 5)), "engagement-convai": (297, "PEC", (0, 1))}


@pytest.mark.parametrize("name", sorted(RE_SETS))
def test_reliable_eval_loads_by_name_and_abbreviation(name: str, data_dir: Path) -> None:
    count, abbrev = RE_SETS[name]
    items = load_benchmark(abbrev, data_dir)
    assert len(items) == count and len({it.id for it in items}) == count
    assert dataset_info(abbrev).name == name and all(it.dataset == name and it.level == "dialog" for it in items)
    info = DATASETS[name]
    assert [(q.name, q.min, q.max, q.negative) for q in info.qualities if q.negative] == \
        [("robotic", 0, 100, True), ("repetitive", 0, 100, True)]
    systems = {it.system for it in items}
    assert QUALITY_CONTROL in systems and len(systems - {QUALITY_CONTROL}) == 10
    it = items[0]
    assert set(it.annotations) == {"robotic", "interesting", "fun", "consistent", "fluent", "repetitive", "topic",
                                   "overall"}
    raw = {q: v[0] for q, v in it.annotations.items()}
    reversed_mean = (100 - raw["robotic"] + raw["interesting"] + raw["fun"] + raw["consistent"] + raw["fluent"]
                     + 100 - raw["repetitive"] + raw["topic"]) / 7
    assert raw["overall"] == pytest.approx(reversed_mean)
    assert {"run", "hit", "assignment", "worker", "z:robotic", "z:overall"} <= set(it.meta)
    assert it.id.startswith(f"{it.meta['run']}/{it.meta['hit']}/{it.meta['assignment']}/")


def test_the_negative_sliders_are_turned_back_to_what_the_worker_rated(tmp_path: Path, data_dir: Path) -> None:
    """The release stores ``robotic`` and ``repetitive`` reversed (100 - the slider; z negated). Loaded, they are
    the slider again: the word-salad quality-control bot is among the two most robotic systems of every run, the chats
    that repeat themselves (system D) the most repetitive, and the two correlate negatively with ``fun``."""
    stored = dict.fromkeys(("interesting", "fun", "consistent", "fluent", "topic"), 50) | {"robotic": 8,
                                                                                             "repetitive": 26}
    hit = {"HITId": "H", "AssignmentId": "A", "WorkerId": "W", "data": [{
        "model": "C", "dialogue": [{"round": 1, "user": "hi", "bot": "hello"}], "raw scores": stored,
        "z scores": {q: (1.5 if q == "robotic" else 0.0) for q in stored}}]}
    path = tmp_path / "pass_free(run1).json"
    path.write_text(json.dumps([hit]))
    (it,) = load_items(path)
    assert (it.human("robotic"), it.human("repetitive"), it.meta["z:robotic"]) == (92, 74, -1.5)
    assert it.human("overall") == pytest.approx((8 + 26 + 5 * 50) / 7)  # reversed back for the mean
    for abbrev in ("RE1", "RE2", "REI"):
        items = load_benchmark(abbrev, data_dir)
        systems = [str(it.system) for it in items]
        robotic = group_means([it.human("robotic") for it in items], systems)
        repetitive = group_means([it.human("repetitive") for it in items], systems)
        assert QUALITY_CONTROL in sorted(robotic, key=robotic.__getitem__)[-2:]  # run 2: D, then the bot
        assert max(repetitive, key=repetitive.__getitem__) in ("D", "D_p")
        fun = [it.human("fun") for it in items]
        assert np.corrcoef([it.human("robotic") for it in items], fun)[0, 1] < 0


def test_a_conversation_is_a_hit_system_chat_and_runs_share_systems_not_conversations(data_dir: Path) -> None:
    one, two = load_benchmark("RE1", data_dir), load_benchmark("RE2", data_dir)
    assert {it.system for it in one} == {it.system for it in two}
    assert not {it.conversation for it in one} & {it.conversation for it in two}
    # Run 2 holds two HITs taken by two workers each, and five HITs where a worker met a system more than once
    # (one HIT two systems twice, one a system three times): every chat is its own item.
    ids = [it.id for it in two]
    assert len(set(ids)) == len(ids)
    assert (sum(1 for i in ids if i.endswith("#2")), sum(1 for i in ids if i.endswith("#3"))) == (6, 1)
    hits = {}
    for it in two:
        hits.setdefault(it.meta["hit"], set()).add(it.meta["assignment"])
    assert sum(1 for a in hits.values() if len(a) == 2) == 2
    # A chat recorded whole at the start of another is one conversation, flagged on both.
    twice = [it for it in one if "repeats" in it.meta]
    assert len(twice) == 2 and twice[0].group == twice[1].group


@pytest.mark.parametrize("name", sorted(PE_SETS))
def test_engagement_loads_with_its_scale_and_flags_blank_turns(name: str, data_dir: Path) -> None:
    count, abbrev, (lo, hi) = PE_SETS[name]
    items = load_benchmark(abbrev, data_dir)
    assert len(items) == count and all(it.level == "turn" for it in items)
    q = DATASETS[name].quality("engagement")
    assert (q.min, q.max, q.negative) == (lo, hi, False)
    assert {it.human("engagement") for it in items} == set(map(float, range(int(lo), int(hi) + 1)))
    if name == "engagement-convai":  # three rows with a blank query or reply: scored, flagged
        odd = [it for it in items if {"empty_response", "empty_context_turn"} & set(it.flags)]
        assert len(odd) == 3
    else:
        assert items[0].meta["engagement_mean_pooling"] == pytest.approx(0.8711934089660645)


def test_the_formats_are_told_by_content(data_dir: Path) -> None:
    for name in (*RE_SETS, *PE_SETS):
        assert detect_format(data_dir / DATASETS[name].path) == DATASETS[name].format


def test_bad_input_names_file_record_and_field(tmp_path: Path) -> None:
    hit = {"HITId": "H", "AssignmentId": "A", "WorkerId": "W", "data": [{
        "model": "A", "dialogue": [{"round": 1, "user": "hi", "bot": "hello"}],
        "raw scores": {"robotic": 10, "interesting": 1, "fun": 1, "consistent": 1, "fluent": 1, "repetitive": 1,
                       "topic": 101},
        "z scores": dict.fromkeys(("robotic", "interesting", "fun", "consistent", "fluent", "repetitive", "topic"), 0.0)}]}
    path = tmp_path / "pass_free(run1).json"
    path.write_text(json.dumps([hit]))
    with pytest.raises(InputError) as exc:
        load_items(path)
    assert exc.value.file == str(path) and exc.value.record == "#0 (H)" and exc.value.field == "data[0].raw scores.topic"
    del hit["data"][0]["z scores"]["fun"]
    hit["data"][0]["raw scores"]["topic"] = 5
    path.write_text(json.dumps([hit]))
    with pytest.raises(InputError, match="missing the fun score"):
        load_items(path)
    csv = tmp_path / "eng.csv"
    csv.write_text("query,response,human_score\nhi,hello,high\n")
    with pytest.raises(InputError) as exc:
        load_items(csv)
    assert (exc.value.record, exc.value.field) == ("row 1", "human_score")


def test_download_knows_where_each_file_lives() -> None:
    urls = {f.path: f.source.url for f in DATA_FILES}
    assert urls["reliable_eval/pass_free(run2).json"] == ("https://raw.githubusercontent.com/TianboJi/Dialogue-Eval/"
                                                          "33af02448092ad180c1c4c68e454324e170f56a6/dialogue_data/"
                                                          "pass_free%28run2%29.json")  # the path escaped
    assert urls["predictive_engagement/humanAMT_engscores_utt.csv"].endswith(
        "PlusLabNLP/PredictiveEngagement/214d3eb20901982d192b05b4d496420dfb273f8e/data/humanAMT_engscores_utt.csv")


def test_the_earlier_sets_keep_their_conversations_and_halves(data_dir: Path) -> None:
    """PredictiveEngagement's DailyDialog queries join 49 conversations of the DailyDialog sets, under those
    sets' names: no earlier set's conversation is renamed, so no half moves and the digest stays."""
    earlier = [n for n in DIGEST_SETS if (data_dir / DATASETS[n].path).is_file()]
    dd = [n for n in earlier if DATASETS[n].corpus == "DailyDialog"]
    sets = {n: load_unidentified(n, data_dir) for n in dd}
    before = conversation_names(sets)
    sets["engagement-dailydialog"] = load_unidentified("engagement-dailydialog", data_dir)
    after = conversation_names(sets)
    assert {k: after[k] for k in before} == before
    joined = {v for k, v in after.items() if k[0] == "engagement-dailydialog" and v != k[1]}
    assert len(joined) == 49
    assert index_digest() == "45d59657b794d939"


def test_negative_qualities_are_oriented_for_averages() -> None:
    assert oriented(-0.4, negative=True) == 0.4 and oriented(0.4, negative=False) == 0.4


# --- the system level ------------------------------------------------------------------------------


def test_system_agreement_correlates_per_system_means_and_resamples_conversations() -> None:
    rng = np.random.default_rng(0)
    systems = [s for s in "ABCDEFGHIJ" for _ in range(8)] + [QUALITY_CONTROL] * 8
    quality = {s: i for i, s in enumerate("ABCDEFGHIJ")} | {QUALITY_CONTROL: -5}
    human = [quality[s] * 10 + float(rng.normal(0, 3)) for s in systems]
    judge = [quality[s] + float(rng.normal(0, 2)) for s in systems]
    a = system_agreement(judge, human, systems, exclude={QUALITY_CONTROL}, n_boot=200)
    means = group_means(judge, systems)
    assert a.left == means and a.left[QUALITY_CONTROL] < min(v for s, v in means.items() if s != QUALITY_CONTROL)
    assert (a.n_systems, a.n_conversations) == (10, 80) and 0.8 < a.value < 1 and a.p_value < 0.01
    assert a.has_interval and a.low < a.value <= a.high <= 1
    assert rank_of(a.left, QUALITY_CONTROL) == (11, 11)  # the judge puts the bot last
    assert rank_of({"x": 1.0, QUALITY_CONTROL: 9.0}, QUALITY_CONTROL, negative=True) == (2, 2)
    reversed_judge = [-quality[s] for s in systems]
    assert system_agreement(reversed_judge, human, systems, exclude={QUALITY_CONTROL}, n_boot=50).value == \
        pytest.approx(-1.0)
    # Below the floor on conversations per system: the figure, no interval and no p.
    few = system_agreement(judge[:3] + judge[8:11] + judge[16:19], human[:3] + human[8:11] + human[16:19],
                           systems[:3] + systems[8:11] + systems[16:19], n_boot=50)
    assert few.n_systems == 3 and not few.has_interval and math.isnan(few.p_value)


def test_replication_draws_each_run_on_its_own() -> None:
    systems = [s for s in "ABCDEFG" for _ in range(7)]
    first = [float("ABCDEFG".index(s)) + 0.1 * (i % 3) for i, s in enumerate(systems)]
    second = [float("ABCDEFG".index(s)) for s in systems]
    r = replication(first, systems, second, systems, n_boot=100)
    assert r.value == pytest.approx(1.0) and r.n_conversations == 49 + 49 and r.has_interval
    # One system with six conversations in the second run: below the floor, no interval and no p.
    short = replication(first, systems, second[:-1], systems[:-1], n_boot=100)
    assert short.n_conversations == 49 + 48 and not short.has_interval and math.isnan(short.p_value)


@pytest.mark.slow
def test_the_system_table_of_a_run_on_the_mock_backend(tmp_path: Path, data_dir: Path, capsys) -> None:
    """The shipped config end to end on the mock backend, then ``judge results system`` on its folder: ten
    systems, the bot's rank, raw and z rows, and the replication ceiling computed from both runs."""
    out = tmp_path / "re"
    config = ROOT / "benchmarks" / "configs" / "reliable_eval_q15_test.toml"
    assert main(["run", str(config), "--backend", "mock", "--data-dir", str(data_dir), "--limit", "80",
                 "--datasets", "RE1", "--methods", "length", "-o", str(out), "--no-progress"]) == 0
    board = (out / "leaderboard.md").read_text()
    assert "RE1 robotic (lower is better)" in board and "RE1 fun |" in board
    summary = json.loads((out / "summary.json").read_text())
    assert summary["datasets"][0]["negative"] == ["robotic", "repetitive"]
    per_q = {r["quality"]: r["spearman"] for r in summary["results"]}
    oriented_mean = sum(oriented(v, q in ("robotic", "repetitive")) for q, v in per_q.items()) / len(per_q)
    assert summary["averages"]["length"]["per_set"]["reliable-eval-free1"] == pytest.approx(oriented_mean, abs=1e-6)
    capsys.readouterr()
    assert main(["results", "system", str(out), "--data-dir", str(data_dir), "--bootstrap", "30"]) == 0
    table = capsys.readouterr().out
    rows = [ln for ln in table.splitlines() if ln.startswith("| length | RE1 |")]
    assert len(rows) == 16  # eight qualities, raw and z
    assert any("robotic (lower is better) | raw 0-100 | 10 |" in ln for ln in rows)
    assert all(" of 11 |" in ln for ln in rows) and "per-worker z" in table
    # The ceiling: people against people over the ten systems, both free-topic runs whole.
    one, two = load_benchmark("RE1", data_dir), load_benchmark("RE2", data_dir)
    expected = replication([it.annotations["overall"][0] for it in one], [str(it.system) for it in one],
                           [it.annotations["overall"][0] for it in two], [str(it.system) for it in two],
                           exclude={QUALITY_CONTROL}, n_boot=30)
    overall = next(ln for ln in rows if "| overall | raw 0-100 |" in ln)
    assert overall.endswith(f"| {expected.value:.3f} [{expected.low:.3f}, {expected.high:.3f}] (n = 10) |")


def test_a_negative_quality_example_shows_the_good_direction(data_dir: Path) -> None:
    """The shipped prompts score how good a chat is; an in-context example of a negative quality shows its
    label turned the same way (a chat rated 0 on ``robotic`` is shown at the top of the prompt's scale)."""
    from judge.prompts.answers import Rating
    from judge.prompts.templates import get_prompt

    robotic = DATASETS["reliable-eval-free1"].quality("robotic")
    fun = DATASETS["reliable-eval-free1"].quality("fun")
    rating = get_prompt("rating")
    chat = next(it for it in load_benchmark("RE1", data_dir) if it.human("robotic") == 0 and it.human("fun") == 0)
    answer = rating.answer
    assert isinstance(answer, Rating)
    assert rating.example_label(chat, robotic) == answer.format_label(answer.max)
    assert rating.example_label(chat, fun) == answer.format_label(answer.min)


def test_the_criteria_prompt_scores_both_sets_with_smollm2(smollm2, data_dir: Path) -> None:
    """SmolLM2 (real, llama.cpp) on Reliable-Eval's shortest chat and an engagement turn with the criteria
    prompt the shipped configs run."""
    from judge.prompts.templates import get_prompt
    from judge.scorers.llm import LLMJudge

    chat = min(load_benchmark("RE1", data_dir), key=lambda it: sum(len(t.text) for t in it.dialog))
    turn = load_benchmark("PEC", data_dir)[3]
    for name, item in (("reliable-eval-free1", chat), ("engagement-convai", turn)):
        quality = DATASETS[name].quality(DATASETS[name].overall)
        scored = list(LLMJudge(get_prompt("yesno-criteria"), smollm2, quality=quality).score([item]))
        assert len(scored) == 1 and scored[0].ok and 0 < scored[0].value < 1
