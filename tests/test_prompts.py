"""Every built-in template renders; metadata is data; the sandbox holds."""

from __future__ import annotations

import pytest

from judge.core.errors import TemplateError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.data.qualities import QUALITY_GROUPS
from judge.prompts.answers import Rating, YesNo
from judge.prompts.templates import builtin_prompts, fed_prompt_name, get_prompt, load_template

FED_TURN, FED_DIAL = QUALITY_GROUPS["fed-turn"], QUALITY_GROUPS["fed-dial"]
TURN = Item(
    id="t1",
    level="turn",
    context=(Turn(USER, "Did you watch the game last night?"), Turn(SYSTEM, "I did! What a finish."),
             Turn(USER, "Who scored the winner?")),
    response="Their striker, in the last minute.",
    fact="The match ended 2-1.",
    annotations={"Overall": (3.0, 4.0), "Interesting": (1.0, 2.0, 2.0)},
)
DIAL = Item(
    id="d1",
    level="dialog",
    dialog=(Turn(USER, "Hi!"), Turn(SYSTEM, "Hello, how are you?"), Turn(USER, "Fine."), Turn(SYSTEM, "Great.")),
    annotations={"Overall": (2.0, 3.0)},
)


def test_every_fed_quality_has_a_prompt():
    names = builtin_prompts()
    for q in FED_TURN:
        assert fed_prompt_name("turn", q.name) in names
    for q in FED_DIAL:
        assert fed_prompt_name("dialog", q.name) in names
    assert {"yesno", "rating"} <= set(names)


@pytest.mark.parametrize("name", sorted(n for n in builtin_prompts() if not get_prompt(n).pairwise))
def test_every_builtin_template_renders(name):
    """Every template that rates one reply renders with examples and without (the pairwise ones show two
    replies and no examples: tests/test_pairwise.py)."""
    t = get_prompt(name)
    item = DIAL if t.level == "dialog" else TURN
    text = t.render(item, [(item, "1/2" if isinstance(t.answer, Rating) else "Yes")])
    assert text.rstrip().endswith(("Rating:", "Answer:"))
    assert "Example" in text
    if item is TURN:
        assert "Their striker, in the last minute." in text
    zero = t.render(item)
    assert "Example 1" not in zero and "Examples" not in zero


def test_fed_turn_prompt_shape():
    t = get_prompt("fed-turn-interesting")
    assert t.answer == Rating(0, 2) and t.quality.name == "Interesting"
    label = t.example_label(TURN, t.quality)
    assert label == "2/2"  # mean 1.667 rounds to 2
    text = t.render(TURN, [(TURN, label)])
    assert "rate how interesting the response is" in text
    assert "A: Who scored the winner?\nResponse: Their striker, in the last minute.\nRating: 2/2" in text
    assert text.endswith("Response: Their striker, in the last minute.\nRating:")


def test_understandable_scale_is_binary_and_overall_is_0_4():
    assert get_prompt("fed-turn-understandable").answer == Rating(0, 1)
    assert get_prompt("fed-dial-consistent").answer == Rating(0, 1)
    assert get_prompt("fed-dial-overall").answer == Rating(0, 4)


def test_yesno_prompt_shape_with_background():
    t = get_prompt("yesno")
    assert isinstance(t.answer, YesNo)
    text = t.render(TURN, [(TURN, "Yes")])
    assert "Background info: The match ended 2-1." in text
    assert "Person A: Who scored the winner?\nResponse: Their striker" in text
    assert text.endswith("Question: Is the above response a good response to the conversation?\nAnswer:")
    no_fact = Item(id="x", level="turn", context=TURN.context, response="ok")
    assert "Background info: none" in t.render(no_fact)


def test_generic_rating_maps_other_scales():
    t = get_prompt("rating")
    fed_overall = FED_TURN[-1]  # 0-4 scale; prompt is 1-5
    item = Item(id="y", level="turn", context=TURN.context, response="x", annotations={"Overall": (4.0,)})
    assert t.example_label(item, fed_overall) == "5/5"


def test_user_template_with_metadata(tmp_path):
    p = tmp_path / "mine.j2"
    p.write_text('{#- judge\nanswer = "rating"\nmin = 1\nmax = 10\n-#}\nRate: {{ item.response }}\nScore:')
    t = load_template(p)
    assert t.answer == Rating(1, 10)
    assert t.render(TURN) == "Rate: Their striker, in the last minute.\nScore:"


@pytest.mark.parametrize(
    "body, needle",
    [
        ("{{ item.response ", "syntax error"),
        ("{{ no_such_variable }}", "undefined"),
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "security"),
        ("{{ cycler.__init__.__globals__ }}", "security"),
        ("{{ item.get.__self__ }}", "security"),
    ],
)
def test_bad_and_hostile_templates_fail_clearly(tmp_path, body, needle):
    p = tmp_path / "bad.j2"
    p.write_text(body)
    with pytest.raises(TemplateError) as err:
        load_template(p).render(TURN)
    assert needle in str(err.value).lower()
    assert str(p) in str(err.value)


def test_bad_metadata(tmp_path):
    p = tmp_path / "m.j2"
    p.write_text('{#- judge\nanswer = "stars"\n-#}\nx')
    with pytest.raises(TemplateError, match="answer"):
        load_template(p)
    p.write_text('{#- judge\nanswer = "rating"\n-#}\nx')
    with pytest.raises(TemplateError, match="min"):
        load_template(p)
    p.write_text('{#- judge\nanswer = "yesno"\nshared_until = "Question:"\n-#}\nx')
    with pytest.raises(TemplateError, match=r"shared_until.*family"):
        load_template(p)


def test_shared_until_marks_where_the_familys_shared_part_ends(tmp_path):
    p = tmp_path / "f.j2"
    p.write_text('{#- judge\nanswer = "yesno"\nfamily = "mine"\nshared_until = "Q:"\n-#}\n'
                 'Example Q: a\nReply: {{ item.response }}\nQ: Good?')
    t = load_template(p)
    text = t.render(Item(id="1", level="turn", context=(Turn(USER, "hi"),), response="hello"))
    assert text[t.shared_chars(text):] == "Q: Good?"  # the last occurrence
    assert get_prompt("yesno").shared_chars(text) == 0  # undeclared: nothing is split


CRITERIA_SPLIT = ["yesno-criteria", "yesno-aspect-consistent", "yesno-aspect-engaging", "yesno-aspect-fluent",
                  "yesno-aspect-relevant", "rating-criteria", "rating-criteria-shared", "yesno-criteria-listwise",
                  "yesno-criteria-listwise-compare"]


def test_the_criteria_prompts_split_where_their_instructions_end():
    """Every template splits where its instructions end, declared or not: for the criteria text that is
    the preamble, up to and including its line break, for turn and dialog items, with background or not,
    with examples or not."""
    for name, path in builtin_prompts().items():
        assert load_template(path).split_instructions, name
    no_fact = Item(id="n", level="turn", context=TURN.context, response="Sure.")
    for name in CRITERIA_SPLIT:
        t = get_prompt(name)
        heads = set()
        for item, shown in ((TURN, []), (no_fact, []), (DIAL, []), (no_fact, [(TURN, "3")])):
            text = t.render(item, shown)
            cut = t.instructions_chars(text)
            assert text[:cut].startswith("You judge chatbot replies.") and text[:cut].count("\n") == 1, name
            assert text[:cut].endswith(".\n") and not text[cut].isspace(), name
            heads.add(text[:cut])
        assert len(heads) == 1, name
    assert get_prompt("rating-criteria").instructions_chars(get_prompt("rating-criteria").render(TURN)) > 0


def test_every_template_splits_where_the_item_begins_unless_it_opts_out(tmp_path):
    """No template declares its split by hand: the text before anything item-dependent is found for each
    one, per level (``rating`` words its first line by level), and with examples that every item shows
    (a manual set) it runs to the end of the examples; with examples chosen per item it stops before the
    first of them. ``split_instructions = false`` opts out."""
    yesno, rating = get_prompt("yesno"), get_prompt("rating")
    text = yesno.render(TURN)
    assert text[: yesno.instructions_chars(text, level="turn")].endswith("Answer Yes or No.\n")
    for item in (TURN, DIAL):
        text = rating.render(item)
        cut = rating.instructions_chars(text, level=item.level)
        assert text[:cut].startswith("Task: Given") and text[:cut].endswith("== Test ==\n"), item.level
    assert rating.instructions_chars(rating.render(TURN)) == 0  # both levels: the first line differs
    other = Item(id="x", level="turn", context=(Turn(USER, "Any news?"),), response="None.", annotations={})
    shown = [(other, "4")]
    text = rating.render(TURN, shown)
    cut = rating.instructions_chars(text, level="turn", examples=shown)
    assert text[:cut].endswith("Rating: 4\n== Test ==\n") and "Any news?" in text[:cut]
    cut = rating.instructions_chars(text, level="turn", examples=None)
    assert text[:cut].endswith("== Example 1 ==\n") and "Any news?" not in text[:cut]
    assert rating.instructions_chars(rating.render(TURN, [(TURN, "2")]), level="turn", examples=shown) == 0
    p = tmp_path / "off.j2"
    p.write_text('{#- judge\nanswer = "yesno"\nsplit_instructions = false\n-#}\nRate replies.\nReply: {{ item.response }}')
    off = load_template(p)
    assert not off.split_instructions and off.instructions_chars(off.render(TURN), level="turn") == 0


def test_split_instructions_finds_the_text_before_anything_item_dependent(tmp_path):
    """The head is the common text of the template rendered for sentinel items, cut back to a line break
    followed by a visible character (a break the tokenizer may merge with what follows is no cut), and a
    prompt that does not begin with it (another quality's text, say) is not split."""
    p = tmp_path / "i.j2"
    p.write_text('{#- judge\nanswer = "yesno"\nsplit_instructions = true\n-#}\n'
                 'Rate replies.\nBe strict.\n  Reply: {{ item.response or "none" }}\nGood?')
    t = load_template(p)
    text = t.render(Item(id="1", level="turn", context=(Turn(USER, "hi"),), response="hello"))
    assert text[: t.instructions_chars(text)] == "Rate replies.\n"  # not after "strict.\n": a space follows
    assert t.instructions_chars("Something else entirely") == 0
    p.write_text('{#- judge\nanswer = "yesno"\nsplit_instructions = true\n-#}\nReply: {{ item.response }}')
    assert load_template(p).instructions_chars(load_template(p).render(TURN)) == 0  # nothing before the item
    p.write_text('{#- judge\nanswer = "yesno"\nsplit_instructions = "yes"\n-#}\nx')
    with pytest.raises(TemplateError, match="split_instructions"):
        load_template(p)


def test_criteria_variant_names_roles_and_flags_empty_replies():
    t = get_prompt("yesno-criteria")
    assert isinstance(t.answer, YesNo)
    text = t.render(TURN)
    assert "Background: The match ended 2-1." in text
    assert "User: Who scored the winner?\nNext system reply: Their striker, in the last minute." in text
    assert text.endswith("Question: Is this reply relevant, sensible and engaging as the next turn?\nAnswer:")
    empty = Item(id="e", level="turn", context=TURN.context, response="  ")
    assert "Next system reply: (empty response)" in t.render(empty)
    assert "System: Great.\nQuestion: Is the system coherent" in t.render(DIAL)


ASPECTS = sorted(n for n in builtin_prompts() if n.startswith("yesno-aspect-"))


def test_aspect_questions_are_the_criteria_prompt_up_to_the_question():
    """The aspect prompts ask one question each after the criteria prompt's own text, so that they differ
    from it only by the question: the text before the first question must be the criteria prompt's, for
    turn and dialog items, with and without examples (whose blocks then ask the aspect's own question)."""
    assert ASPECTS == ["yesno-aspect-consistent", "yesno-aspect-engaging", "yesno-aspect-fluent",
                       "yesno-aspect-relevant"]
    criteria = get_prompt("yesno-criteria")
    examples = [(TURN, "Yes"), (Item(id="x", level="turn", context=TURN.context, response=""), "No")]
    for item, shown in ((TURN, []), (TURN, examples), (DIAL, [])):
        base = criteria.render(item, shown)
        head = base[:base.index("Question: ")]
        questions = set()
        for name in ASPECTS:
            t = get_prompt(name)
            assert isinstance(t.answer, YesNo)
            text = t.render(item, shown)
            assert text.startswith(head) and text.endswith("?\nAnswer:"), name
            question = text[len(head):].split("\n")[0]
            assert question.startswith("Question: ") and question not in base
            assert text.count(question) == len(shown) + 1, name  # the examples ask it too
            questions.add(question)
        assert len(questions) == len(ASPECTS), "every aspect asks its own question"


def test_the_criteria_prompts_built_for_sharing_split_where_their_question_starts():
    """The five yes/no prompts of the criteria family and `rating-criteria-shared` declare one shared
    part, so llama.cpp evaluates an item's preamble and conversation once for all six: zero-shot, the
    part before the split is the same text in all of them and ends where the question begins.
    `rating-criteria` differs from its first line on, so it declares no split (one would only add a
    batch boundary)."""
    for item in (TURN, DIAL):
        shared = set()
        for name in ["yesno-criteria", *ASPECTS, "rating-criteria-shared"]:
            t = get_prompt(name)
            assert (t.family, t.shared_until) == ("criteria", "Question:"), name
            text = t.render(item)
            cut = t.shared_chars(text)
            assert 0 < cut < len(text) and text[cut:].startswith("Question: ") and "Question:" not in text[:cut]
            shared.add(text[:cut])
        assert len(shared) == 1
    rating = get_prompt("rating-criteria")
    assert rating.family == "criteria" and rating.shared_until is None


def test_rating_criteria_is_the_criteria_text_asking_for_a_rating():
    """`rating-criteria` shows the criteria prompt's conversation block and asks for a 1-5 rating, read
    from its declared scale; its examples show the `value/max` labels a rating prompt shows."""
    from judge.prompts.answers import Rating

    t = get_prompt("rating-criteria")
    assert t.answer == Rating(1, 5) and t.quality is not None and t.quality.name == "Overall"
    criteria = get_prompt("yesno-criteria").render(TURN)
    text = t.render(TURN)
    block = criteria[criteria.index("Background: "):criteria.index("Question: ")]
    assert block in text and criteria.split("\n")[0].replace("Answer Yes or No.", "") in text
    assert text.split("\n")[0].endswith("Answer with an integer rating from 1 to 5.")
    assert text.endswith("Question: How good is this reply as the next turn, from 1 (very bad) to 5 (very good)?\n"
                         "Answer:")
    assert t.render(DIAL).endswith("How good is the system in this conversation, from 1 (very bad) to 5 (very good)?"
                                   "\nAnswer:")
    shown = t.render(TURN, [(DIAL, "4/5")])
    assert "Examples\n" in shown and "(very good)?\nAnswer: 4/5\n" in shown


def test_rating_criteria_shared_asks_for_the_rating_in_its_question():
    """`rating-criteria-shared` is the yes/no prompts' text up to the question, byte for byte, and puts
    the 1-5 scale in its question, read from its declared scale; the published `rating-criteria` text
    is a different prompt and stays as it was."""
    from judge.prompts.answers import Rating

    t = get_prompt("rating-criteria-shared")
    assert t.answer == Rating(1, 5) and t.quality is not None and t.quality.name == "Overall"
    for item, question in ((TURN, "How good is this reply as the next turn?"),
                           (DIAL, "How good is the system in this conversation?")):
        criteria = get_prompt("yesno-criteria").render(item)
        text = t.render(item)
        assert text[:criteria.index("Question: ")] == criteria[:criteria.index("Question: ")]
        assert text.endswith(f"Question: {question} Answer with an integer rating from 1 (very bad) to 5 "
                             "(very good).\nAnswer:")
        assert text != get_prompt("rating-criteria").render(item)
