"""What runs write: the per-item row and the results folder of ``judge run``, as typed data."""
