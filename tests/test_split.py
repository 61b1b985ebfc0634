"""Development / test halves: by conversation, stable, disjoint, and honoured by `judge run` and
`judge bench`. Real data from ../shared/data; no model is loaded except in the bench test."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.core.errors import InputError
from judge.data.items import conversation_of
from judge.datasets import load_benchmark, load_items, resolve_source
from judge.datasets.benchmarks import DATASETS, indexed
from judge.datasets.conversations import build_index, index_text
from judge.datasets.identity import INDEX
from judge.datasets.split import split_items, split_of
from judge.harness import load_experiment, plan
from judge.harness.config import parse_experiment

ROOT = Path(__file__).resolve().parents[1]
DSTC10 = ["TU", "DZ", "PU", "DGU", "DGR", "FT", "EG", "FD"]


@pytest.mark.parametrize("name", DSTC10)
def test_halves_are_disjoint_by_conversation_and_cover_the_set(name, data_dir):
    items = load_benchmark(name, data_dir)
    assert all(it.group for it in items)  # an item without one could not be kept to one half
    dev, test = split_items(items, "dev"), split_items(items, "test")
    assert sorted(it.id for it in dev + test) == sorted(it.id for it in items)
    dev_groups = {it.group for it in dev}
    assert not dev_groups & {it.group for it in test}, "a conversation is in both halves"
    assert 0.3 < len(dev) / len(items) < 0.7
    # Another split seed is another split.
    assert [it.id for it in split_items(items, "dev", seed=1)] != [it.id for it in dev]


def test_split_of_is_a_fixed_function_of_the_group():
    # Pinned: the halves must not move between versions, or a "test" number may have been chosen on.
    assert [split_of(f"conv:{i}") for i in range(8)] == ["test", "dev", "test", "dev", "dev", "test", "dev", "test"]
    assert {split_of(f"g{i}") for i in range(50)} == {"dev", "test"}
    with pytest.raises(InputError, match="must be one of dev, test"):
        split_items([], "train")


def test_run_scores_only_the_split_and_records_it(tmp_path, data_dir):
    cfg = tmp_path / "s.toml"
    cfg.write_text('datasets = ["FT", "DZ"]\nsplit = "test"\nlimit = 30\n[[methods]]\ntype = "classic"\n'
                   'scorer = "length"\n')
    exp = load_experiment(cfg).with_overrides(data_dir=str(data_dir))
    for cell in plan(exp):
        assert len(cell.items) == 30
        assert {split_of(conversation_of(it)) for it in cell.items} == {"test"}
        # In-context examples come from the dev half only: never a test item.
        assert cell.pool and {split_of(conversation_of(it)) for it in cell.pool} == {"dev"}
    dev = exp.with_overrides(split="dev")
    assert not {it.id for c in plan(dev) for it in c.items} & {it.id for c in plan(exp) for it in c.items}
    with pytest.raises(InputError, match="split: must be one of dev, test"):
        parse_experiment({"datasets": ["FT"], "split": "train", "methods": [{"prompt": "yesno"}]}, "x.toml")


@pytest.mark.slow
def test_cli_run_and_bench_take_split(tmp_path, data_dir):
    env = {**os.environ}
    out = tmp_path / "res"
    cfg = ROOT / "benchmarks" / "configs" / "classic.toml"
    proc = subprocess.run([sys.executable, "-m", "judge", "run", str(cfg), "--data-dir", str(data_dir), "--check",
                           "--split", "dev", "--limit", "5", "-o", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "5 items" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "judge", "bench", "--data-dir", str(data_dir), "--dataset", "FD",
                           "--scorer", "length", "--split", "test", "--results", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    n_test = len(split_items(load_benchmark("FD", data_dir), "test"))
    assert f"items     {n_test} scored of 125 rated" in proc.stdout
    assert "test half of the conversations" in proc.stdout
    assert "drawn from the test half" in (out / "leaderboard.md").read_text()


# The real halves of every shipped set at split_seed 0: (set, dev items, dev conversations, test items,
# test conversations, sha256 of the sorted test ids joined by newlines). Any change to the split, the
# loaders' ids or their grouping shows here; a test number is only comparable under the same halves.
HALVES = [
    # FED-Turn's items follow the FED-Dial dialog they were cut from (before the split by conversation each FED set was split
    # on its own: 159, 53, 216, 71, "1a82be66..."); FED-Dial's halves did not move.
    ("fed-turn", 192, 64, 183, 60, "ba3218e50bd99654480b4e8b8553e42441a9c62f836d32b6d0e058b04530cf5c"),
    ("fed-dial", 64, 64, 61, 61, "73695f1610cd0dd95c922731708162a6fe09bc9f0e04bd0e599a7d5f057681c5"),
    ("topical-usr", 162, 25, 198, 29, "3deccb9accd41a06826cb1b73bb7e902877d8b75f1bc8b732c63c66f2e2e6b30"),
    ("persona-usr", 155, 31, 145, 28, "96ba7ef4613df7a7398a762144d07f16a5b8c34e1ba8bff3a6dc9b5eac4179e8"),
    ("dailydialog-zhao", 459, 49, 441, 48, "01fef9470dad645946a6dfd86f8df5608bb1f4be2f2d3600fcab0cf8e3f4e869"),
    # The DailyDialog sets follow DailyDialog-Zhao's halves in the few dialogues they share with it and
    # with each other (before: DGU 230, 46, 270, 54, "93dd9c83..."; DGR 166, 83, 134, 66, "0bd2dc41...").
    ("dailydialog-gupta", 240, 48, 260, 52, "4ede3e9f2eb969add1049c5bbb1904580c6964c8c30821058413348639804565"),
    # Since the one-turn links GRADE's windows also follow the dialogue they continue by one shared turn (DGR 00008,
    # 00061, 00158, 00211 went dev -> test, 00102, 00252 test -> dev; before: 166, 83, 134, 66, "9c045d93...").
    ("dailydialog-grade", 164, 82, 136, 67, "1933f8b263edbef94ed2069e8186774466391aedadb839242891b025024b65cd"),
    ("empathetic-grade", 136, 66, 164, 81, "577da0397a99a7176fbc6b3f8cf97af4646c703571a853afa105aa6adcf79a9c"),
    # The original FED release follows FED-Dial too (before: 212, 53, 288, 71, "eea0a614...").
    ("fed", 256, 64, 244, 60, "6a0d65664f003280556b708c4247388989907f7a726b3aad1e48dd85eaaf3e30"),
    ("usr-topical", 162, 25, 198, 29, "3deccb9accd41a06826cb1b73bb7e902877d8b75f1bc8b732c63c66f2e2e6b30"),
    ("usr-persona", 155, 31, 145, 28, "96ba7ef4613df7a7398a762144d07f16a5b8c34e1ba8bff3a6dc9b5eac4179e8"),
    ("gupta-csv", 240, 48, 260, 52, "4ede3e9f2eb969add1049c5bbb1904580c6964c8c30821058413348639804565"),
    # The response-pair sets, split by instruction (an item per reply, both replies of a pair in one half).
    ("pandalm", 966, 85, 1032, 85, "c7359c0e2a3432063d3f2cb4ff73e07645988d40155c03b08bea0605a90c917e"),
    ("llmbar-natural", 86, 43, 114, 57, "337d209602943a1e65cbfe96c58483a046eff82ca38dcd265542d1903389212a"),
    ("llmbar-gptinst", 88, 44, 96, 48, "2aaa60ea02045ffda2f5d50d40db0cd4934d5edcf94236c672135359800c7a28"),
    ("llmbar-gptout", 52, 26, 42, 21, "8a0ccc920a42657bf31cdd7d81100b4d7e2233fa3645479e290f775029bef11c"),
    ("llmbar-manual", 36, 18, 56, 28, "2a7d16ea4b21604806c6679803b69a6851452f5598542a8862781f1945b29003"),
    ("llmbar-neighbor", 132, 66, 136, 68, "1043d799c35aafa4a38b0ddd6c754b96e007ab91b42a6136e03993fd88415de4"),
    ("llmbar-faireval", 62, 31, 70, 35, "6867c8095108138a8de95dbaa93a1ba8e896c9e5390e850ebb2ff579a26ed56a"),
    ("llmbar-llmeval2", 200, 100, 200, 100, "302b93477f004cca7cf61d05be6f299aacdf1d4f3c3d41af221b042be35cdaad"),
    # Reliable-Eval's runs and PredictiveEngagement: registered after the sets above, whose halves they left
    # as they were (tests/test_set_reliable_eval.py).
    ("reliable-eval-free1", 631, 631, 659, 658, "4eea6cefc913e3760fccc707f1134f2271e1068267d0ec9dbd045ef61fcc2938"),
    ("reliable-eval-free2", 490, 490, 506, 505, "0e72b92e38615340e1ec2207e69f0ac8ed5c9f794849c3787f1b3e0f95f4f570"),
    ("reliable-eval-ice", 617, 617, 607, 607, "12c5c89544af2be876ca73fb41e79557211615c9d075f458774ead03d4d9edf8"),
    # PredictiveEngagement's DailyDialog queries open windows of the DailyDialog dialogues that hold them, and a
    # short reply ("thank you .") no longer chains two queries' rows (before: 882, 146, 918, 148, "12278f0d...").
    ("engagement-dailydialog", 924, 153, 876, 144, "e9fc8df0c829c87d81a248d7f0cabe2d8dcf108f25b0d0acb1a01ca6fcf4ee52"),
    ("engagement-convai", 134, 124, 163, 121, "541478d64febf26f570b7426a1130deb381c80e086cff5f3e3f116bacf9a1d2a"),
]
#: Registered, but their files are not in ../shared/data: once they are, they need a row in HALVES.
NOT_SHIPPED = {"persona-zhao", "convai2-grade"}


@pytest.mark.parametrize("name, n_dev, g_dev, n_test, g_test, digest", HALVES, ids=[h[0] for h in HALVES])
def test_real_halves_are_pinned(data_dir, name, n_dev, g_dev, n_test, g_test, digest):
    items = load_benchmark(name, data_dir)
    dev, test = split_items(items, "dev", 0), split_items(items, "test", 0)
    assert (len(dev), len({it.group for it in dev}), len(test), len({it.group for it in test})) == \
        (n_dev, g_dev, n_test, g_test)
    assert hashlib.sha256("\n".join(sorted(it.id for it in test)).encode()).hexdigest() == digest


def test_every_shipped_set_has_pinned_halves(data_dir):
    assert {h[0] for h in HALVES} | NOT_SHIPPED == set(DATASETS)
    for name in NOT_SHIPPED:
        assert not (data_dir / DATASETS[name].path).exists(), f"{name} is shipped now: pin its halves in HALVES"


def test_kshot_pool_of_a_test_run_is_the_dev_half(tmp_path, data_dir):
    cfg = tmp_path / "k.toml"
    cfg.write_text('datasets = ["FT", "TU"]\nsplit = "test"\nlimit = 5\n[[methods]]\nname = "b"\nprompt = "yesno"\n'
                   'selector = "bm25-context"\nk = 2\n')
    exp = load_experiment(cfg).with_overrides(data_dir=str(data_dir))
    for cell in plan(exp):
        dev = split_items(load_benchmark(cell.dataset, data_dir), "dev")
        assert {it.id for it in cell.pool} == {it.id for it in dev if it.human(cell.quality.name) is not None}
    assert exp.example_pool() == "dev half"
    # Without a split the pool stays every rated item of the set.
    cfg.write_text(cfg.read_text().replace('split = "test"\n', ""))
    whole = load_experiment(cfg).with_overrides(data_dir=str(data_dir))
    assert whole.example_pool() == "whole set"
    for cell in plan(whole):
        assert len(cell.pool) == sum(it.human(cell.quality.name) is not None
                                     for it in load_benchmark(cell.dataset, data_dir))


def _dev_ids(data_dir, name):
    return {it.id for it in split_items(load_benchmark(name, data_dir), "dev")}


@pytest.mark.slow
def test_cli_bench_and_run_show_only_dev_examples_on_the_test_half(tmp_path, data_dir):
    """Every example shown to a test-half item is a dev-half item, in `judge bench --split test` and in
    `judge run` with split = "test"; the meta, summary and output say where the pool came from. The pool is
    drawn before any model runs, so the mock backend answers (real BM25 and templates; the real model's
    k-shot runs are in tests/test_engine.py and tests/test_selectors.py)."""
    env = {**os.environ}
    out = tmp_path / "bench"
    proc = subprocess.run([sys.executable, "-m", "judge", "bench", "--data-dir", str(data_dir), "--dataset", "FT",
                           "--prompt", "yesno", "--selector", "bm25-context", "--k", "2", "--limit", "3",
                           "--split", "test", "--backend", "mock", "--results", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "pool: dev half" in proc.stdout
    rows = [json.loads(line) for f in out.rglob("*.jsonl") for line in f.read_text().splitlines()]
    dev = _dev_ids(data_dir, "FT")
    assert len(rows) == 3 and all(len(r["examples"]) == 2 for r in rows)
    assert all(set(r["examples"]) <= dev for r in rows)
    assert json.loads((out / "summary.json").read_text())["experiment"]["example_pool"] == "dev half"
    metas = [json.loads(f.read_text()) for f in out.rglob("*.meta.json")]
    assert metas and all(m["example_pool"] == "dev half" for m in metas)
    assert "in-context examples from the dev half" in (out / "leaderboard.md").read_text()

    cfg = tmp_path / "k.toml"
    cfg.write_text('datasets = ["DZ"]\nsplit = "test"\nlimit = 3\n[defaults]\nbackend = "mock"\n'
                   '[[methods]]\nname = "b"\nprompt = "yesno"\nselector = "bm25-context"\nk = 2\n')
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "judge", "run", str(cfg), "--data-dir", str(data_dir),
                           "-o", str(run)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for f in run.rglob("*.jsonl") for line in f.read_text().splitlines()]
    dev = _dev_ids(data_dir, "DZ")
    assert len(rows) == 3 and all(r["examples"] and set(r["examples"]) <= dev for r in rows)


def _norm(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _turns(item) -> list[str]:
    return [t.text.strip() for t in (item.context if item.level == "turn" else item.dialog)]


class _Shown:
    """What one set's items show, indexed once for the pairwise checks below (found here without the
    library's linking, by rules of this test's own)."""

    def __init__(self, items) -> None:
        self.contexts: dict[tuple[str, ...], list[str]] = {}
        self.seqs: list[tuple[str, list[str]]] = []
        self.pairs: dict[tuple[str, str], list[str]] = {}
        self.line_groups: dict[str, set[str]] = {}
        self.later: dict[str, list[str]] = {}
        self.openings: list[tuple[str, str]] = []
        for it in items:
            if it.level == "turn" and it.context:
                self.contexts.setdefault(tuple(_turns(it)), []).append(it.id)
                self.openings.append((_norm(_turns(it)[0]), it.id))
            ends = ([it.response] if it.response else []) + list(it.references)
            for seq in [_turns(it) + [e.strip()] for e in ends] or [_turns(it)]:
                self.seqs.append((it.id, seq))
                norm = [_norm(t) for t in seq]
                for t in norm:
                    self.line_groups.setdefault(t, set()).add(it.group)
                for p in {(x, y) for x, y in itertools.pairwise(norm) if len(x) >= 20 and len(y) >= 20}:
                    self.pairs.setdefault(p, []).append(it.id)
            for t in _turns(it)[1:] + list(it.references):
                self.later.setdefault(_norm(t), []).append(it.id)


def _shared_conversations(a: _Shown, b: _Shown, one_corpus: bool = True) -> set[tuple[str, str]]:
    """(id in A, id in B) of items that visibly come from one conversation: A's whole context starts B's
    turns (or the reverse; a context of one turn only when it has 20 letters or more), or both show one pair of
    consecutive turns of 20 letters or more each,
    wherever it sits (not the split's rules). Across corpora (``one_corpus`` false) a pair holding a line
    that either set shows in two or more of its own conversations is a stock exchange, not one conversation:
    Reliable-Eval's retrieval bots say "i love to travel . i love to travel ." or "i like the color red . what
    is yours ?" in dozens of chats of every run, so users of two runs asking "where have you traveled to?" or
    "what is your favorite food?" around it share a pair, and "hello, how are you doing today?" / "i'm doing
    well. how are you?" opens PersonaChat conversations and live chats alike; none of those chats continues
    another's. Nor is one exchange: a bot answers a question the same way in any chat ("who is your favorite
    classical composer?" / "i like the oldies . i like the beatles ." in two runs, by two workers), so across
    corpora two items must share two such pairs. A conversation copied into another corpus shows many."""
    found = set()
    for xs, ys, flip in ((a, b, False), (b, a, True)):
        for item_id, seq in ys.seqs:
            # A context of one short turn ("Hi") opens many conversations: it is no evidence of one.
            for k in range(1 if len(seq[0]) >= 20 else 2, len(seq) + 1):
                for other in xs.contexts.get(tuple(seq[:k]), ()):
                    found.add((item_id, other) if flip else (other, item_id))
    across: dict[tuple[str, str], int] = {}
    for p, ids in a.pairs.items():
        if one_corpus:
            found.update((x, y) for x in dict.fromkeys(ids) for y in b.pairs.get(p, ()))
        elif max(len(s.line_groups.get(t, ())) for s in (a, b) for t in p) == 1:
            for xy in {(x, y) for x in ids for y in b.pairs.get(p, ())}:
                across[xy] = across.get(xy, 0) + 1
    return found | {xy for xy, n in across.items() if n >= 2}


#: The original releases as users give them: by path, under their own file names.
RELEASES = {"fed": "fed/fed_data.json", "usr-topical": "usr/tc_usr_data.json", "usr-persona": "usr/pc_usr_data.json",
            "gupta-csv": "dailydialog_gupta/mturk_rating_processed_output.csv"}


def _single_turn_links(a: _Shown, b: _Shown, openers: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(id in A, id in B) where B's context opens with a turn of 16 letters or more that A shows after its
    first turn (a later context turn or a reference): a window continuing A's dialogue by one turn. A turn
    that opens items of several groups (``openers``: text -> groups, over every set) is a stock opening, not a
    link."""
    return {(x, item_id) for first, item_id in b.openings if len(first) >= 16 and len(openers[first]) == 1
            for x in a.later.get(first, ()) if x != item_id}


@pytest.mark.slow
def test_no_conversation_is_in_both_halves_of_two_sets(data_dir):
    """Over every pair of shipped registered sets and the original release files given by path (and within
    each, for the single-turn links): items that come from one conversation (FED-Turn's turns and their
    FED-Dial dialog, an original release and its DSTC10 copy, DailyDialog dialogues that two DailyDialog
    sets sampled, GRADE windows that continue a dialogue by one turn) are in the same half, so choosing on
    one set's dev half never reads another set's test conversations."""
    shipped = [n for n in DATASETS if (data_dir / DATASETS[n].path).exists()]
    sets = {name: load_benchmark(name, data_dir) for name in shipped}
    corpus = {name: DATASETS[name].corpus for name in shipped}
    for name, path in RELEASES.items():
        sets[f"{path} (by path)"] = load_items(data_dir / path)
        corpus[f"{path} (by path)"] = DATASETS[name].corpus
    halves = {name: {it.id for it in split_items(items, "test")} for name, items in sets.items()}
    shown = {name: _Shown(items) for name, items in sets.items()}
    openers: dict[str, set[str]] = {}
    for name, items in sets.items():
        for it in items:
            if it.level == "turn" and it.context:
                openers.setdefault(_norm(_turns(it)[0]), set()).add(f"{corpus[name]}:{it.group}")
    names = list(sets)
    linked: dict[tuple[str, str], int] = {}
    crossing = []
    for i, a in enumerate(names):
        for b in names[i:]:
            pairs = _shared_conversations(shown[a], shown[b], corpus[a] == corpus[b]) if a != b else set()
            if corpus[a] == corpus[b]:  # one shared turn is evidence only within a corpus
                pairs |= _single_turn_links(shown[a], shown[b], openers)
                pairs |= {(y, x) for x, y in _single_turn_links(shown[b], shown[a], openers)}
            linked[(a, b)] = len(pairs)
            crossing += [(a, x, b, y) for x, y in pairs if (x in halves[a]) != (y in halves[b])]
    assert not crossing, f"{len(crossing)} pairs of items of one conversation in different halves, e.g. {crossing[:3]}"
    # The check sees the shared conversations it is about (else it could not fail).
    assert linked[("fed-turn", "fed-dial")] >= 375
    assert linked[("dailydialog-gupta", "dailydialog-grade")] > 0
    assert linked[("dailydialog-zhao", "dailydialog-gupta")] > 0
    assert linked[("fed-turn", "fed/fed_data.json (by path)")] >= 375
    assert not linked[("topical-usr", "empathetic-grade")]
    # The three dialogues linked by one turn only (the one-turn links): an interview and a "sheet with a hole" dialogue
    # of Gupta's sample continued by GRADE windows, an aisle-seat dialogue inside GRADE.
    assert {("dailydialog-gupta_00000", "dailydialog-grade_00061"), ("dailydialog-gupta_00265", "dailydialog-grade_00008")
            } <= _single_turn_links(shown["dailydialog-gupta"], shown["dailydialog-grade"], openers)
    assert ("dailydialog-grade_00143", "dailydialog-grade_00102") in \
        _single_turn_links(shown["dailydialog-grade"], shown["dailydialog-grade"], openers)


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_a_release_file_given_by_path_has_its_registered_sets_halves(data_dir, tmp_path, name):
    """By path, under its own name, copied elsewhere under another name, or re-exported with other case and
    punctuation, a release file's items are in the halves of the registered set (before the guards read content, by
    path, fed_data.json had 236 of its 500 items in the other half)."""
    registered = {it.id: split_of(conversation_of(it)) for it in load_benchmark(name, data_dir)}
    by_path = load_items(data_dir / RELEASES[name])
    copy = tmp_path / ("renamed" + Path(RELEASES[name]).suffix)
    copy.write_bytes((data_dir / RELEASES[name]).read_bytes())
    for items in (by_path, load_items(copy), resolve_source(str(copy)).items):
        assert {it.id: split_of(conversation_of(it)) for it in items} == registered
    assert resolve_source(str(copy)).info.name == name  # the published file, recognised by its content
    # A re-export: JSONL, upper case, punctuation dropped, no references; the halves are the same.
    lines = [json.dumps({"id": it.id, "context": [{"speaker": t.speaker, "text": t.text.upper().replace(",", "")}
                                                   for t in it.context],
                         "response": (it.response or "").upper().replace(".", "")})
             if it.level == "turn" else
             json.dumps({"id": it.id, "dialog": [{"speaker": t.speaker, "text": t.text.upper()} for t in it.dialog]})
             for it in by_path]
    export = tmp_path / "export.jsonl"
    export.write_text("\n".join(lines) + "\n")
    assert {it.id: split_of(conversation_of(it)) for it in load_items(export)} == registered


@pytest.mark.slow
def test_the_conversation_index_is_what_the_registered_files_give(data_dir):
    """judge/datasets/conversations.json (the registered sets' conversations by content, which every loaded
    item is named by) equals what the rules build from the shipped files; rebuild it with write_index when a
    loader, a rule or a set changes. Every registered item is in it, named as the rules name its group."""
    built = build_index(data_dir)
    assert json.loads(INDEX.read_text()) == built
    assert index_text(built) == INDEX.read_text()
    # Every shipped set of a dialogue corpus; the response-pair sets (index = false) are named by their texts.
    assert set(built["sets"]) == {n for n in DATASETS if (data_dir / DATASETS[n].path).exists()
                                  and indexed(DATASETS[n].corpus)}
    assert {n for n in DATASETS if not indexed(DATASETS[n].corpus)} == {
        "pandalm", "llmbar-natural", "llmbar-gptinst", "llmbar-gptout", "llmbar-manual", "llmbar-neighbor",
        "llmbar-faireval", "llmbar-llmeval2"}


def test_halves_do_not_depend_on_which_other_files_are_present(data_dir, tmp_path):
    """FED-Turn alone in a data directory (no FED-Dial beside it) keeps the halves it has beside FED-Dial:
    its items are named by content, not by what else the folder holds."""
    alone = tmp_path / "data"
    (alone / "dstc10_track5").mkdir(parents=True)
    path = DATASETS["fed-turn"].path
    (alone / path).write_bytes((data_dir / path).read_bytes())
    assert [it.id for it in split_items(load_benchmark("FT", alone), "test")] == \
        [it.id for it in split_items(load_benchmark("FT", data_dir), "test")]
