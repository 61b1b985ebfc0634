"""``judge label`` without a browser: the order, resuming, the checks on a label, the page's routes over real
HTTP on 127.0.0.1, the raters' agreement, and labels as the human ratings of ``judge bench`` and ``judge fit``.
The browser session is tests/test_label_browser.py's."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import threading
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from judge.cli import build_parser, main
from judge.cli.fit import rated_sets
from judge.core.errors import InputError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.data.qualities import Quality
from judge.datasets.benchmarks import dataset_info
from judge.datasets.source import resolve_source
from judge.heads.head import read_head
from judge.label.agreement import agreement, input_conversations
from judge.label.app import make_label_server
from judge.label.desk import LabelDesk, item_view, scale_steps
from judge.label.order import uncertainty, uncertainty_weights, uniform_order, weighted_order
from judge.label.ratings import labelled_source
from judge.records.labels import Label, append_label, read_labels
from judge.records.rows import read_rows
from judge.stats.agreement import krippendorff_alpha

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "bot_v1.jsonl"
OVERALL = Quality("overall", "turn", 1, 5, "good the response is")
FLUENT = Quality("fluent", "turn", 0, 1, "fluent the response is")


def _items(n: int = 6) -> dict[str, Item]:
    return {f"i{k}": Item(f"i{k}", "turn", context=(Turn(USER, f"question {k}"),), response=f"answer {k}",
                          fact=f"knowledge {k}", next_user="what the user said next", references=("a reference",),
                          annotations={"overall": (float(k % 5 + 1),)})
            for k in range(n)}


def _desk(path: Path, seed: int = 3, items: dict[str, Item] | None = None) -> LabelDesk:
    items = items or _items()
    return LabelDesk(items, (OVERALL, FLUENT), uniform_order(list(items), seed), path)


def test_the_uniform_order_is_a_seeded_shuffle():
    ids = [f"i{k}" for k in range(50)]
    a, b, c = uniform_order(ids, 1), uniform_order(ids, 1), uniform_order(ids, 2)
    assert a.ids == b.ids and sorted(a.ids) == sorted(ids) and a.ids != c.ids and a.ids != tuple(ids)
    assert set(a.probability.values()) == {1 / 50} and a.positions[a.ids[7]] == 7
    with pytest.raises(InputError, match="appears twice"):
        uniform_order(["x", "y", "x"], 0)


def test_the_weighted_order_draws_in_proportion_to_the_weights():
    """Two items weighted 9 and 1: the first comes first 90% of the time over many seeds; the probabilities
    recorded are the weights' shares."""
    first = Counter(weighted_order(["a", "b"], {"a": 9.0, "b": 1.0}, seed).ids[0] for seed in range(2000))
    assert abs(first["a"] / 2000 - 0.9) < 0.025  # 3.7 standard errors
    order = weighted_order(["a", "b", "c"], {"a": 2.0, "b": 1.0, "c": 1.0}, 5)
    assert order == weighted_order(["a", "b", "c"], {"a": 2.0, "b": 1.0, "c": 1.0}, 5)
    assert dict(order.probability) == {"a": 0.5, "b": 0.25, "c": 0.25}


def test_uncertainty_is_the_answer_distributions_share_of_the_largest_entropy(tmp_path):
    assert uncertainty({"yes": 0.5, "no": 0.5}) == pytest.approx(1.0)
    assert uncertainty({"yes": 1.0, "no": 0.0}) == 0.0
    assert 0 < uncertainty({"1": 0.7, "2": 0.2, "3": 0.1}) < 1
    rows = tmp_path / "rows.jsonl"
    assert main(["score", str(DATA), "--backend", "mock", "--no-progress", "-o", str(rows)]) == 0
    weights = uncertainty_weights(read_rows(rows), str(rows))
    assert set(weights) == {it["id"] for it in map(json.loads, DATA.read_text().splitlines())}
    assert all(0.1 <= w <= 1 for w in weights.values())


def test_a_restart_resumes_each_rater_at_their_first_unlabelled_item(tmp_path):
    path = tmp_path / "labels.jsonl"
    desk = _desk(path)
    order = desk.order.ids
    for item_id in order[:2]:
        desk.record("ann", item_id, {"overall": 4, "fluent": 1})
    desk.record("ann", order[3], {"overall": 2, "fluent": 0})  # a label out of turn (another page's) counts too
    again = _desk(path)  # as a restarted server opens it
    assert again.next_position("ann") == 2 and again.next_position("bo") == 0
    again.record("ann", order[2], {"overall": 3, "fluent": 1})
    assert _desk(path).next_position("ann") == 4
    labels = read_labels(path)
    assert [(lb.id, lb.position, lb.probability) for lb in labels] == \
        [(order[p], p, 1 / 6) for p in (0, 1, 3, 2)]
    assert all(lb.rater == "ann" and lb.time and lb.time.endswith("+00:00") for lb in labels)


def test_a_labels_file_of_another_order_or_input_is_refused(tmp_path):
    path = tmp_path / "labels.jsonl"
    _desk(path, seed=3).record("ann", "i0", {"overall": 4, "fluent": 1})
    assert uniform_order(list(_items()), 4).positions["i0"] != _desk(path).order.positions["i0"]
    with pytest.raises(InputError, match="another order"):
        _desk(path, seed=4)
    items = _items()
    with pytest.raises(InputError, match="another order"):  # same seed, weighted: other probabilities
        LabelDesk(items, (OVERALL,), weighted_order(list(items), {i: 1.0 + (i == "i1") for i in items}, 3), path)
    append_label(path, Label("elsewhere", {"overall": 3.0}, "ann"))
    with pytest.raises(InputError, match="does not hold"):
        _desk(path)


def test_a_label_off_the_scale_or_missing_a_quality_is_refused_and_not_written(tmp_path):
    path = tmp_path / "labels.jsonl"
    desk = _desk(path)
    for scores, match in (({"overall": 6, "fluent": 1}, "scale 1-5"), ({"overall": 2.5, "fluent": 1}, "steps"),
                          ({"overall": 3}, "fluent is needed"), ({"overall": True, "fluent": 1}, "a number"),
                          ({"overall": 3, "fluent": 1, "fun": 2}, "not a quality")):
        with pytest.raises(InputError, match=match):
            desk.record("ann", "i0", scores)
    with pytest.raises(InputError, match="rater"):
        desk.record("  ", "i0", {"overall": 3, "fluent": 1})
    with pytest.raises(InputError, match="no such item"):
        desk.record("ann", "nope", {"overall": 3, "fluent": 1})
    assert not path.exists()
    assert scale_steps(OVERALL) == (1, 2, 3, 4, 5) and scale_steps(Quality("x", "turn", 0, 0.5)) is None


def test_a_rater_sees_the_conversation_and_never_a_rating_or_what_came_next():
    shown = item_view(_items()["i2"])
    assert shown == {"id": "i2", "level": "turn", "turns": [["user", "question 2"]], "response": "answer 2",
                     "background": "knowledge 2"}
    dialog = Item("d", "dialog", dialog=(Turn(USER, "hi"), Turn(SYSTEM, "hello")), annotations={"overall": (3.0,)})
    assert item_view(dialog)["turns"] == [["user", "hi"], ["bot", "hello"]] and item_view(dialog)["response"] is None


@contextlib.contextmanager
def _serving(desk: LabelDesk):
    server = make_label_server(desk, "ann")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _call(url: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}") if e.headers.get_content_type() == "application/json" else {}


def test_the_pages_routes_label_over_http_on_loopback(tmp_path):
    path = tmp_path / "labels.jsonl"
    desk = _desk(path)
    with _serving(desk) as base:
        assert base.startswith("http://127.0.0.1:")
        page = urllib.request.urlopen(base + "/", timeout=10).read().decode()
        assert "Save and next" in page and '"rater":"ann"' in page and "connect-src 'self'" in page
        status, state = _call(base + "/api/next?rater=ann")
        assert status == 200 and state["position"] == 0 and state["item"]["id"] == desk.order.ids[0]
        assert "overall" not in json.dumps(state["item"])  # the data's rating is nowhere in what the page gets
        status, state = _call(base + "/api/label", {"rater": "ann", "id": desk.order.ids[0],
                                                     "scores": {"overall": 5, "fluent": 1}})
        assert status == 200 and state["position"] == 1 and state["labelled"] == 1
        status, refused = _call(base + "/api/label", {"rater": "ann", "id": desk.order.ids[1],
                                                      "scores": {"overall": 9, "fluent": 1}})
        assert status == 400 and "scale" in refused["error"]
        assert _call(base + "/api/label", {"rater": "ann"})[0] == 400
        assert _call(base + "/api/next?rater=")[0] == 400
        assert _call(base + "/elsewhere")[0] == 404
        assert [(lb.id, lb.scores, lb.rater) for lb in read_labels(path)] == \
            [(desk.order.ids[0], {"overall": 5.0, "fluent": 1.0}, "ann")]
        path.unlink()
        path.mkdir()  # the file can no longer be written: the page is told, nothing is counted
        status, failed = _call(base + "/api/label", {"rater": "ann", "id": desk.order.ids[1],
                                                     "scores": {"overall": 4, "fluent": 1}})
        assert status == 500 and "could not be saved" in failed["error"] and desk.next_position("ann") == 1


def _labels(path: Path, ratings: dict[str, dict[str, float]]) -> None:
    for rater, by_item in ratings.items():
        for item_id, value in by_item.items():
            append_label(path, Label(item_id, {"overall": value}, rater))


def test_agreement_is_krippendorffs_alpha_over_items_two_raters_labelled(tmp_path):
    path = tmp_path / "labels.jsonl"
    ann = {f"c0{k}": float(k % 5 + 1) for k in range(1, 9)}
    bo = {k: min(5.0, v + (k == "c03")) for k, v in ann.items()}
    _labels(path, {"ann": ann, "bo": bo, "cy": {"c01": 2.0}})
    append_label(path, Label("c02", {"overall": 1.0}, "cy"))
    append_label(path, Label("c02", {"overall": 3.0}, "cy"))  # cy changed their mind: the later one counts
    (a,) = agreement(read_labels(path), input_conversations(str(DATA)))
    units = [[ann[k], bo[k], *([2.0] if k == "c01" else [3.0] if k == "c02" else [])] for k in ann]
    assert (a.n_items, a.n_raters, a.n_labels, a.n_conversations) == (8, 3, 18, 8)
    assert a.alpha_interval == pytest.approx(krippendorff_alpha(units, "interval"))
    assert a.low is not None and a.high is not None and a.low <= a.alpha_interval <= a.high
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["label", str(DATA), "--agreement", str(path)]) == 0
    assert f"overall: 8 items rated by >= 2 of 3 raters (18 labels): Krippendorff's alpha {a.alpha_interval:.3f}" \
        in out.getvalue() and "1000 bootstrap resamples of their 8 conversations" in out.getvalue()
    with contextlib.redirect_stdout(out):
        assert main(["label", "--agreement", str(path)]) == 0  # no input: no conversations, no interval
    assert "no interval: name the input the labels rate" in out.getvalue()
    single = tmp_path / "one.jsonl"
    _labels(single, {"ann": ann})
    assert agreement(read_labels(single))[0].n_items == 0
    _labels(single, {"bo": {"c01": 1.0, "x9": 2.0}, "cy": {"x9": 3.0}})
    with pytest.raises(InputError, match="'x9' is not in the input"):
        agreement(read_labels(single), input_conversations(str(DATA)), file=str(single))


def test_the_agreement_interval_resamples_conversations_not_replies(tmp_path):
    # A chat log of 12 conversations of 4 replies each. Two raters agree on every reply of half of them and are
    # two points apart on every reply of the others: resampling the 48 replies as if they were independent
    # would narrow the interval as if there were four times the evidence there is.
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"id": f"k{c}", "messages": [
        m for t in range(4) for m in ({"role": "user", "content": f"Conversation {c}, question {t}?"},
                                      {"role": "assistant", "content": f"Answer {t} of {c}."})]}) + "\n"
        for c in range(12)), encoding="utf-8")
    conversations = input_conversations(str(log))
    assert len(conversations) == 48 and len(set(conversations.values())) == 12
    ann = {item: float(1 + (int(item[1:].split("#")[0]) + int(item.split("#")[1])) % 3) for item in conversations}
    bo = {item: v + (2.0 if int(item[1:].split("#")[0]) % 2 else 0.0) for item, v in ann.items()}
    path = tmp_path / "labels.jsonl"
    _labels(path, {"ann": ann, "bo": bo})
    (by_conversation,) = agreement(read_labels(path), conversations, n_boot=500)
    (by_reply,) = agreement(read_labels(path), {item: item for item in conversations}, n_boot=500)
    assert by_conversation.alpha_interval == by_reply.alpha_interval and by_conversation.n_conversations == 12
    assert by_conversation.low is not None and by_conversation.high is not None
    assert by_reply.low is not None and by_reply.high is not None
    assert by_conversation.high - by_conversation.low > 1.3 * (by_reply.high - by_reply.low)


def test_the_agreement_input_may_be_a_registered_sets_name(data_dir, tmp_path, capsys):
    """INPUT of --agreement is read as judge label reads it: a registered set's name under --data-dir is its file,
    and a name without a data directory is refused, naming the flag."""
    by_name = input_conversations("TU", str(data_dir))
    assert by_name == input_conversations(str(data_dir / dataset_info("TU").path))
    assert len(by_name) == 360 and 7 < len(set(by_name.values())) < 360
    path = tmp_path / "labels.jsonl"
    first = sorted(by_name)[:40]
    _labels(path, {"ann": {i: float(k % 5 + 1) for k, i in enumerate(first)}, "bo": dict.fromkeys(first, 3.0)})
    capsys.readouterr()
    assert main(["label", "TU", "--data-dir", str(data_dir), "--agreement", str(path)]) == 0
    n_conv = len({by_name[i] for i in first})
    assert f"(1000 bootstrap resamples of their {n_conv} conversations)" in capsys.readouterr().out
    with pytest.raises(InputError, match=r"pass data_dir \(--data-dir\)"):
        input_conversations("TU")


def test_bench_takes_the_labels_as_the_human_ratings(tmp_path):
    path, rows = tmp_path / "labels.jsonl", tmp_path / "rows.jsonl"
    _labels(path, {"ann": {"c01": 5.0, "c02": 4.0, "c03": 1.0}, "bo": {"c01": 4.0, "c03": 2.0}})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["bench", str(DATA), "--backend", "mock", "--labels", str(path), "-o", str(rows), "--no-progress"])
    assert code == 0
    assert {r.id: r.human for r in read_rows(rows)} == {"c01": 4.5, "c02": 4.0, "c03": 1.5}
    assert "3 scored of 3 rated (5 without a rating skipped)" in out.getvalue()
    assert f"the human ratings are {path}'s" in out.getvalue()
    _labels(path, {"ann": {"c99": 3.0}})
    with pytest.raises(InputError, match="not in the input"):
        labelled_source(resolve_source(str(DATA)), path)
    (tmp_path / "off.jsonl").write_text('{"id": "c01", "scores": {"overall": 7}}\n')
    with pytest.raises(InputError, match="outside the overall scale"):
        labelled_source(resolve_source(str(DATA)), tmp_path / "off.jsonl")


def test_fit_learns_from_the_labels(tmp_path):
    path = tmp_path / "labels.jsonl"
    _labels(path, {"ann": {f"c0{k}": float(k % 5 + 1) for k in range(1, 7)}})
    args = ["fit", str(DATA), "--labels", str(path), "-o", str(tmp_path / "head.json"), "--backend", "mock",
            "--prompt", "yesno-criteria", "--no-progress"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(args) == 0
    assert re.search(r"bot_v1 +overall +all +6 items", out.getvalue())  # the 6 labelled of the 8 items
    # The head says whose ratings it learned (the labels file, by path and content) beside the data file, and
    # still refuses the data's conversations.
    (trained,) = read_head(tmp_path / "head.json").trained_on
    assert trained.path == str(DATA.resolve()) and trained.labels == str(path.resolve())
    assert trained.labels_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["score", str(DATA), "--head", str(tmp_path / "head.json"), *args[6:], "-o",
                     str(tmp_path / "r.jsonl")]) != 0
    assert "the head learned from bot_v1 (all of it), which holds 8 of the 8 conversations" in err.getvalue()
    with pytest.raises(InputError, match="one DATA"):
        rated_sets(build_parser().parse_args([*args[:2], str(DATA), *args[2:]]))


def test_the_docs_commands_run(tmp_path, monkeypatch):
    """docs/label.md's commands, as a reader types them in a folder beside examples/: the serving ones open
    their desk (the server itself is tests/test_label_browser.py's), the others run."""
    from judge.label.order import FLOOR
    from judge.label.setup import open_desk
    from tests.test_docs_commands import judge_commands

    commands = judge_commands((ROOT / "docs" / "label.md").read_text(encoding="utf-8"))
    assert [c[0] for c in commands] == ["label", "label", "bench", "fit", "score", "label"]
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    parser = build_parser()
    for words in commands:
        args = parser.parse_args(words)
        out = io.StringIO()
        if args.command == "label" and args.agreement is None:
            desk, title = open_desk(args.input, args.labels, args.quality, scales={}, order=args.order,
                                    rows=args.rows, seed=args.seed)
            assert title == "bot_v1 · overall" and len(desk.order.ids) == 8
            if args.order == "uncertainty":
                assert all(FLOOR / 8 <= p < 1 for p in desk.order.probability.values())
                continue
            for position, item_id in enumerate(desk.order.ids):  # two raters, each labelling in the order
                desk.record("ann", item_id, {"overall": position % 5 + 1})
                if position < 7:
                    desk.record("bo", item_id, {"overall": min(5, position % 5 + 1 + position % 2)})
            continue
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(words) == 0, words
        if args.command == "label":
            assert "overall: 7 items rated by >= 2 of 2 raters (14 labels)" in out.getvalue()
    assert (tmp_path / "head.json").is_file() and (tmp_path / "rows.jsonl").is_file()


def test_a_registered_set_is_labelled_by_name_on_its_own_scale(tmp_path, data_dir):
    from judge.label.setup import open_desk

    desk, title = open_desk("TU", tmp_path / "new" / "tu.jsonl", [], scales={}, data_dir=str(data_dir))
    assert title == "topical-usr · Overall" and [q["steps"] for q in desk.qualities_view()] == [(1, 2, 3, 4, 5)]
    shown = desk.state("ann")["item"]
    assert shown["background"] and shown["turns"] and shown["response"] is not None  # Topical-Chat's facts shown
    assert (tmp_path / "new").is_dir()
