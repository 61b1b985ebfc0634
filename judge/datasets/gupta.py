"""Loader for Gupta et al. (2019) DailyDialog ratings, ``mturk_rating_processed_output.csv``."""

from __future__ import annotations

from ..data.items import Item
from ._common import alternate, assign_groups, cell_number, csv_rows, non_blank

#: Columns the loader needs (``prevgt``, the original next utterance, is also among the references).
COLUMNS = ("model", "context_id", "human_average_rating", "response", "all_references", "context")
CONTEXT_SEP = "||||"


def from_text(text: str, file: str, dataset: str) -> list[Item]:
    """Items from the CSV text: context split on ``||||``, references on TAB, one pre-averaged rating; ids
    ``dailydialog-gupta_%05d`` in row order (as in the DSTC10 copy)."""
    def missing(header: list[str]) -> str | None:
        absent = [c for c in COLUMNS if c not in header]
        return (f"missing CSV column(s) {', '.join(absent)}; expected the header {','.join(COLUMNS)} (and prevgt)"
                if absent else None)

    _, rows = csv_rows(text, file, missing)
    items: list[Item] = []
    links: dict[int, str] = {}
    for i, row in enumerate(rows):
        rec = f"row {i + 1}"
        response = row["response"].strip()  # may be empty: data, flagged by Item.flags
        items.append(Item(
            id=f"dailydialog-gupta_{i:05d}", level="turn", response=response, system=non_blank(row["model"]),
            context=alternate([t.strip() for t in row["context"].split(CONTEXT_SEP) if t.strip()]),
            references=tuple(r.strip() for r in row["all_references"].split("\t") if r.strip()), dataset=dataset,
            annotations={"overall": (cell_number(row["human_average_rating"], file, rec, "human_average_rating"),)}))
        # context_id is "<dialog>_<turn>" in the DailyDialog test set: same dialog, same conversation.
        dialog_id = row["context_id"].strip().split("_")[0]
        if dialog_id:
            links[i] = dialog_id
    assign_groups(items, links)
    return items
