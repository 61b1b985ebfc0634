"""What runs write, as typed records (:mod:`judge.records.record`): the per-item row, the pair row, a results
folder's layout and its summary, and their JSON Schemas (:mod:`judge.records.schema`)."""
