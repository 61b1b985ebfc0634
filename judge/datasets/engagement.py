"""Loader for PredictiveEngagement (Ghazarian et al., AAAI 2020): turn-level engagement ratings.

Two CSV files, each row one reply to a one-utterance query:

- ``Eng_Scores_queries_gen_gtruth_replies.csv`` (``query``, ``response``, ``human_score`` 1-5, then the
  paper's automatic scores): DailyDialog queries with their ground-truth and generated replies. The
  automatic scores (RUBER's unreferenced score, its contextualised variant, and the paper's engagement
  metric with mean and max pooling) travel in ``Item.meta`` as anchors; their cells end with a line
  break in the release, which is dropped.
- ``humanAMT_engscores_utt.csv`` (``id``, ``query``, ``reply``, ``label`` 0/1): ConvAI utterances with
  Mechanical Turk engagement labels (0 = not engaging, 1 = engaging).

Both rate the quality ``engagement``. A blank query or reply is data (three ConvAI rows have one): the item
is kept, with an empty turn, and flagged. Rows that reply to the same query share a group, and so do
rows one of which replies with the other's query (in the DailyDialog file, when that reply is not a short
stock line: :func:`_continued`).
"""

from __future__ import annotations

from ..core.components import components
from ..core.errors import InputError
from ..data.items import USER, Item, Turn
from ._common import assign_groups, cell_number, check_unique_ids, csv_rows
from .identity import normalised

#: The columns each file's loader needs, and the rating column.
DAILYDIALOG = ("query", "response", "human_score")
CONVAI = ("id", "query", "reply", "label")
#: The DailyDialog file's automatic scores, kept in Item.meta under these keys.
AUTOMATIC = {"Ruber_Unref_Score": "ruber_unref", "CTX_Unref_Score": "ctx_unref",
             "Eng_Score_MeanPooling": "engagement_mean_pooling", "Eng_Score_MaxPooling": "engagement_max_pooling"}
QUALITY = "engagement"
#: In the DailyDialog file a reply continues the row whose query it is only when it holds this many letters and
#: digits: a generated "thank you ." equals the query "Thank you ." of another DailyDialog conversation, and
#: chained the two.
MIN_CONTINUING_REPLY = 16


def kind(header: list[str]) -> str | None:
    """Which of the two files a CSV header is (``dailydialog`` or ``convai``), else None."""
    if all(c in header for c in DAILYDIALOG):
        return "dailydialog"
    if all(c in header for c in CONVAI):
        return "convai"
    return None


def from_text(text: str, file: str, dataset: str) -> list[Item]:
    """The format loader registered in ``judge.datasets.FORMAT_LOADERS`` (either file, told by its header)."""
    header, rows = csv_rows(text, file, lambda h: None if kind(h) else (
        f"missing CSV column(s): expected the header {','.join(DAILYDIALOG)} (DailyDialog file) or "
        f"{','.join(CONVAI)} (ConvAI file), got {','.join(h)}"))
    which = kind(header)
    labels = [f"row {i + 1}" for i in range(len(rows))]
    items = [_dailydialog(row, i, file, rec, dataset) if which == "dailydialog" else _convai(row, file, rec, dataset)
             for i, (row, rec) in enumerate(zip(rows, labels, strict=True))]
    check_unique_ids(items, labels, file)
    assign_groups(items, _continued(items, MIN_CONTINUING_REPLY if which == "dailydialog" else 0))
    return items


def _continued(items: list[Item], min_reply: int = 0) -> dict[int, str]:
    """Rows of one conversation by their texts: a row whose reply is another row's query (the ground-truth
    reply of DailyDialog, the next ConvAI utterance) continues that row's conversation, and rows replying to
    one query share it. Returned as a link key per row (``assign_groups``' ``links``). A reply shorter than
    ``min_reply`` letters and digits continues nothing: among DailyDialog's generated replies "thank you ." is
    another dialogue's query by chance. ConvAI's rows are a chat's consecutive utterances, whose reply is the
    next row's query however short ("hi"), so there every reply continues (``min_reply`` 0)."""
    links: list[tuple[int, int]] = []
    by_query: dict[str, int] = {}
    for i, it in enumerate(items):
        q = _key(it.context[0].text)
        if q:
            links.append((i, by_query.setdefault(q, i)))
    for i, it in enumerate(items):
        reply = _key(it.response or "")
        j = by_query.get(reply) if len(reply) >= min_reply else None
        if j is not None:
            links.append((i, j))
    return {i: f"row-{group[0]}" for group in components(range(len(items)), links) for i in group}


def _dailydialog(row: dict[str, str], i: int, file: str, rec: str, dataset: str) -> Item:
    score = cell_number(row["human_score"], file, rec, "human_score")
    meta: dict[str, str | int | float | bool | None] = {
        key: cell_number(row[col], file, rec, col) for col, key in AUTOMATIC.items() if col in row}
    return Item(id=f"{dataset}_{i:05d}", level="turn", context=(Turn(USER, row["query"].strip()),),
                response=row["response"].strip(), dataset=dataset, annotations={QUALITY: (score,)}, meta=meta)


def _convai(row: dict[str, str], file: str, rec: str, dataset: str) -> Item:
    ident = row["id"].strip()
    if not ident:
        raise InputError("empty id", file=file, record=rec, field="id")
    label = cell_number(row["label"], file, rec, "label")
    return Item(id=f"{dataset}_{ident}", level="turn", context=(Turn(USER, row["query"].strip()),),
                response=row["reply"].strip(), dataset=dataset, annotations={QUALITY: (label,)})


def _key(text: str) -> str:
    """A text as rows are matched: letters and digits, lower case (``do n't`` is ``don't``); a text of neither
    (``:)``) as written."""
    return normalised(text) or text.strip()
