"""What gets judged in a conversation: every assistant reply as a turn item (its context everything before
it), and the whole conversation as a dialog item; ``level`` chooses.

The system and developer messages are the bot's instructions. They are not turns of the conversation:
the judge sees them as the item's background (``Item.fact``, which every built-in prompt shows), labelled
``The bot's instructions:`` so that a judge tells them from knowledge given to the bot. The bot's steps
(tool calls without a reply, tool results) are turns of the bot's side, consecutive ones joined into one.
Ids are ``CONVERSATION#INDEX`` (the reply's index among the conversation's messages) and ``CONVERSATION``
for the dialog item; the conversation id is the items' group.
"""

from __future__ import annotations

from typing import Literal

from ...data.items import SYSTEM, USER, Item, Level, Turn
from .messages import FEEDBACK_SCALES, Conversation, Message

ChatLevel = Literal["turn", "dialog", "both"]
LEVELS: tuple[ChatLevel, ...] = ("turn", "dialog", "both")

#: How the bot's instructions are introduced in the item's background.
INSTRUCTIONS_LABEL = "The bot's instructions: "


def instructions(texts: list[str]) -> str | None:
    """The background of an item whose bot was instructed ``texts`` (None without instructions)."""
    joined = "\n".join(t for t in texts if t)
    return INSTRUCTIONS_LABEL + joined if joined else None


def conversation_items(conv: Conversation, dataset: str, level: ChatLevel = "turn") -> list[Item]:
    """The items ``level`` asks for, in the order of the conversation (the dialog item last)."""
    background: list[str] = []
    turns: list[Turn] = []
    placeholders: list[int] = []  # per turn (and instruction), the placeholders it shows
    step_open = False
    out: list[Item] = []
    replies = [i for i, m in enumerate(conv.messages) if m.role == "assistant" and not m.step]
    last = replies[-1] if replies else -1
    for index, message in enumerate(conv.messages):
        if message.role == "system":
            background.append(message.text)
            placeholders.append(message.non_text)  # shown in the background
            continue
        if message.role == "assistant" and not message.step and level != "dialog":
            rating = dict(message.feedback) or (conv.feedback if index == last else {})
            out.append(_item(conv, dataset, f"{conv.id}#{index}", background, rating,
                             sum(placeholders) + message.non_text, message, context=tuple(turns), response=message.text))
        if message.step and step_open:  # the bot's consecutive steps are one turn
            turns[-1] = Turn(SYSTEM, turns[-1].text + "\n" + message.text)
            placeholders[-1] += message.non_text
        else:  # a reply or a step is the bot's turn (tool results are steps), anything else the user's
            turns.append(Turn(SYSTEM if message.step or message.role == "assistant" else USER, message.text))
            placeholders.append(message.non_text)
        step_open = message.step
    if level != "turn" and turns:
        out.append(_item(conv, dataset, conv.id, background, conv.feedback, sum(placeholders), None,
                         dialog=tuple(turns)))
    return out


def _item(conv: Conversation, dataset: str, item_id: str, background: list[str], rating: dict[str, float],
          non_text: int, message: Message | None, **text: object) -> Item:
    meta = dict(conv.meta)
    if message is not None:
        meta.update(message.meta)
    if non_text:
        meta["non_text_parts"] = non_text
    level: Level = "dialog" if "dialog" in text else "turn"
    return Item(id=item_id, level=level, fact=instructions(background), system=conv.system, group=conv.id,
                dataset=dataset, annotations={k: (v,) for k, v in rating.items()},
                scales={k: FEEDBACK_SCALES[k] for k in rating}, meta=meta, **text)  # type: ignore[arg-type]
