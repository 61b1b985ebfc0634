"""Chatbot logs as they are (docs/chat-logs.md): OpenAI messages, ShareGPT, tables and OTLP traces load as
turn and dialog items, with the bot's instructions as labelled background, tool steps and non-text parts
rendered compactly, the log's metadata and a user's feedback kept; bad records get errors naming file,
record and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.cli import main
from judge.core.errors import InputError
from judge.data.items import SYSTEM, USER, Turn
from judge.datasets import detect_format, load_items
from judge.datasets.chat import files
from judge.prompts.templates import get_prompt

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "chat"
MESSAGES = EXAMPLES / "messages.jsonl"


def _write(path: Path, *records: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _error(path: Path, **kw: object) -> InputError:
    with pytest.raises(InputError) as info:
        load_items(path, **kw)  # type: ignore[arg-type]
    return info.value


@pytest.fixture(scope="module")
def items():
    return {it.id: it for it in load_items(MESSAGES, level="both")}


def test_every_reply_is_a_turn_item_and_every_conversation_a_dialog(items):
    assert list(items) == ["conv-001#4", "conv-001#6", "conv-001", "conv-002#2", "conv-002#4", "conv-002"]
    assert {it.group for it in items.values()} == {"conv-001", "conv-002"}
    assert [it.level for it in items.values()] == ["turn", "turn", "dialog", "turn", "turn", "dialog"]
    assert [it.id for it in load_items(MESSAGES)] == ["conv-001#4", "conv-001#6", "conv-002#2", "conv-002#4"]
    assert [it.id for it in load_items(MESSAGES, level="dialog")] == ["conv-001", "conv-002"]


def test_the_system_prompt_is_labelled_background_and_the_context_everything_before(items):
    it = items["conv-001#6"]
    assert it.fact == "The bot's instructions: You are the help desk of an online shoe shop. Be brief and friendly."
    assert [t.speaker for t in it.context] == [USER, SYSTEM, SYSTEM, USER]
    assert it.response == "You're welcome! Anything else I can help with?"
    # A developer message is the bot's instructions too.
    assert items["conv-002#2"].fact == "The bot's instructions: Answer questions about shoe sizes. Never promise refunds."
    assert "Background info: The bot's instructions: You are the help desk" in get_prompt("yesno").render(it)


def test_a_tool_call_without_content_is_a_step_joined_with_its_result(items):
    it = items["conv-001#4"]
    assert it.context[-1] == Turn(SYSTEM, '[tool call] order_status({"order":"5512"})\n'
                              '[tool result] order_status: {"status": "shipped", "eta": "2026-11-30"}')
    assert it.response.startswith("Your order 5512 has shipped")
    assert "context_ends_with_system" in it.flags


def test_content_parts_are_joined_and_an_image_is_a_named_placeholder_that_flags(items):
    it = items["conv-002#2"]
    assert it.context[-1].text == "Do these run small?\n[image]"
    assert "non_text_part" in it.flags and it.meta["non_text_parts"] == 1
    assert "non_text_part" not in items["conv-001#4"].flags


def test_an_empty_reply_is_scored_and_flagged(items):
    assert items["conv-002#4"].response == "" and "empty_response" in items["conv-002#4"].flags


def test_metadata_and_feedback(items):
    it = items["conv-001#6"]
    assert it.system == "shopbot"
    assert {k: it.meta[k] for k in ("conversation_id", "model", "version", "channel", "timestamp")} == {
        "conversation_id": "conv-001", "model": "shopbot", "version": "2.3", "channel": "web",
        "timestamp": "2026-11-28T09:14:02Z"}
    # The record's thumbs up rates the conversation and its last reply; a message's own rates that reply.
    assert it.annotations == {"user_thumbs": (1.0,)} and it.scales == {"user_thumbs": (0.0, 1.0)}
    assert items["conv-001"].annotations == {"user_thumbs": (1.0,)}
    assert items["conv-001#4"].annotations == {}
    assert items["conv-002#2"].annotations == {"user_thumbs": (0.0,)}


def test_stars_and_thumbs_in_an_object(tmp_path):
    path = _write(tmp_path / "f.jsonl", {"messages": [{"role": "user", "content": "hi"},
                                                      {"role": "assistant", "content": "hello"}],
                                         "feedback": {"thumbs": "up", "stars": 4, "comment": "ok"}})
    (it,) = load_items(path)
    assert it.annotations == {"user_thumbs": (1.0,), "user_stars": (4.0,)}
    assert it.scales == {"user_thumbs": (0.0, 1.0), "user_stars": (1.0, 5.0)}
    assert it.id == "f-1#1"  # no id in the record: the file's name and the line


def test_bare_arrays_and_json_arrays(tmp_path):
    conv = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    jsonl = _write(tmp_path / "bare.jsonl", conv, conv)
    assert [it.id for it in load_items(jsonl)] == ["bare-1#1", "bare-2#1"]
    array = tmp_path / "array.json"
    array.write_text(json.dumps([{"id": "a", "messages": conv}, conv]), encoding="utf-8")
    assert detect_format(array) == "chat"
    assert [it.id for it in load_items(array)] == ["a#1", "array-1#1"]
    single = tmp_path / "one.json"
    single.write_text(json.dumps(conv, indent=1), encoding="utf-8")
    assert [it.response for it in load_items(single)] == ["hello"]


def test_sharegpt_with_a_tool_call_and_a_system_prompt():
    assert detect_format(EXAMPLES / "sharegpt.json") == "sharegpt"
    items = {it.id: it for it in load_items(EXAMPLES / "sharegpt.json")}
    assert list(items) == ["sg-1#2", "sg-1#4", "sg-2#3"]
    assert items["sg-1#4"].fact == "The bot's instructions: You are a cooking assistant."
    assert items["sg-2#3"].context[-1].text == ('[tool call] weather({"city":"Oslo"})\n'
                                                '[tool result] weather: {"temp_c": -3, "sky": "snow"}')


def test_a_table_with_its_own_column_names(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [{"conv": "p1", "model": "bot", "prompt": "hi there", "completion": "hello!", "thumbs": True},
            {"conv": "p2", "model": "bot", "prompt": "bye", "completion": "", "thumbs": False}]
    path = tmp_path / "flat.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    items = load_items(path, columns={"id": "conv", "user": "prompt", "assistant": "completion"})
    assert [(it.id, it.context[0].text, it.response, it.annotations) for it in items] == [
        ("p1#1", "hi there", "hello!", {"user_thumbs": (1.0,)}), ("p2#1", "bye", "", {"user_thumbs": (0.0,)})]
    messages = tmp_path / "m.parquet"
    pq.write_table(pa.Table.from_pylist([json.loads(MESSAGES.read_text().splitlines()[0])]), messages)
    assert [it.id for it in load_items(messages)] == ["conv-001#4", "conv-001#6"]
    with pytest.raises(InputError, match="no column 'convo'") as info:
        load_items(path, columns={"id": "convo", "user": "prompt", "assistant": "completion"})
    assert info.value.record == "row 0"


def test_judge_score_reads_a_table_with_columns_and_a_feedback_quality(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "logs.parquet"
    pq.write_table(pa.Table.from_pylist([{"q": "hi", "a": "hello", "f": "up"}, {"q": "yo", "a": "", "f": "down"}]),
                   path)
    assert main(["score", str(path), "--columns", "user=q,assistant=a,feedback=f", "--backend", "mock",
                 "--model", "m", "--no-cache", "--quality", "user_thumbs", "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["id"], r["human"], r["quality"]) for r in rows] == [("logs-0#1", 1.0, "user_thumbs"), ("logs-1#1", 0.0, "user_thumbs")]


@pytest.mark.slow
def test_a_dataset_folder_reads_through_the_datasets_library(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("datasets")
    import pyarrow.parquet as pq

    folder = tmp_path / "mylogs"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist([json.loads(MESSAGES.read_text().splitlines()[0])]), folder / "train.parquet")
    assert [it.id for it in load_items(folder, format="tabular")] == ["conv-001#4", "conv-001#6"]


def test_a_chat_jsonl_streams_a_line_at_a_time(tmp_path):
    """Records come one line at a time: the first are read before a broken later line is reached."""
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n{broken\n", encoding="utf-8")
    reader = files.records(path, str(path))
    assert next(reader)[0] == 1 and next(reader)[0] == 2
    with pytest.raises(InputError) as info:
        next(reader)
    assert info.value.record == 3


@pytest.mark.parametrize("record, line, field, message", [
    ({"messages": [{"role": "usr", "content": "hi"}]}, 1, "messages[0].role", "unknown role 'usr'"),
    ({"messages": [{"role": "user", "content": 5}]}, 1, "messages[0].content", "expected a string or an array"),
    ({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}, 1, "messages[0].content[0].type", "needs a 'type'"),
    ({"messages": "hi"}, 1, "messages", "expected an array of messages"),
    ({"message": []}, 1, "messages", "missing required field"),
    ({"messages": [{"role": "user", "content": "hi"}], "feedback": 7}, 1, "feedback", "outside the scale"),
    ({"messages": [{"role": "user", "content": "hi"}], "feedback": "meh"}, 1, "feedback", "unknown feedback"),
    ({"messages": [{"role": "user", "content": "hi", "feedback": "up"}]}, 1, "messages[0].feedback", "rates a reply"),
    ({"messages": [{"role": "assistant", "content": None, "tool_calls": [{"function": {}}]}]}, 1,
     "messages[0].tool_calls[0].function.name", "expected"),
])
def test_bad_records_are_named_by_file_line_and_field(tmp_path, record, line, field, message):
    path = _write(tmp_path / "bad.jsonl", record)
    err = _error(path, format="chat")
    assert (err.file, err.record, err.field) == (str(path), line, field)
    assert message in err.reason


def test_a_conversation_id_used_twice_is_an_error(tmp_path):
    conv = {"id": "x", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a"}]}
    err = _error(_write(tmp_path / "dup.jsonl", conv, conv))
    assert (err.record, err.field) == (2, "id") and "first on line 1" in err.reason


def test_a_log_without_replies_has_no_items(tmp_path):
    path = _write(tmp_path / "q.jsonl", {"messages": [{"role": "user", "content": "hi"}]})
    assert "no conversation has an assistant reply" in _error(path).reason
    assert [it.id for it in load_items(path, level="dialog")] == ["q-1"]


def test_the_cli_flags_are_checked(tmp_path, capsys):
    assert main(["score", str(MESSAGES), "--backend", "mock", "--columns", "usr=q"]) == 2
    assert "unknown name 'usr'" in capsys.readouterr().err
    assert main(["score", str(ROOT / "examples" / "dialogues.jsonl"), "--input-format", "jsonl", "--level",
                 "dialog", "--backend", "mock"]) == 2
    assert "--level is for chat logs" in capsys.readouterr().err


def test_input_format_forces_a_format(tmp_path, capsys):
    # A ShareGPT record read as OpenAI messages is refused, naming what is missing.
    assert main(["score", str(EXAMPLES / "sharegpt.json"), "--input-format", "chat", "--backend", "mock"]) == 2
    assert "record #0, field 'messages': missing required field" in capsys.readouterr().err


def test_a_native_jsonl_still_reads_natively():
    assert detect_format(ROOT / "examples" / "dialogues.jsonl") == "jsonl"
    assert detect_format(MESSAGES) == "chat"


def test_a_real_model_scores_a_chat_log_with_instructions_a_tool_call_and_an_image(smollm2):
    """End to end with SmolLM2 (llama.cpp): the log's replies and conversations are scored, the prompts show
    the bot's instructions, the tool step and the placeholder, and the scores differ by reply."""
    from judge.scorers.llm import LLMJudge

    items = [it for it in load_items(MESSAGES) if it.id in ("conv-001#4", "conv-002#2")]
    prompt = get_prompt("yesno-criteria")
    shown = {it.id: prompt.render(it) for it in items}
    assert "Background: The bot's instructions: You are the help desk" in shown["conv-001#4"]
    assert "[tool call] order_status(" in shown["conv-001#4"] and "[image]" in shown["conv-002#2"]
    scores = list(LLMJudge(prompt, smollm2).score(items))
    assert [s.item_id for s in scores] == [it.id for it in items]
    assert all(s.error is None and s.value is not None and 0 <= s.value <= 1 and s.complete for s in scores)
    assert len({round(s.value or 0, 6) for s in scores}) == len(scores)
