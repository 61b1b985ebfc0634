"""Heads: a judge that learns from rated conversations.

A head is a linear map from the judge model's hidden state at the answer position (read in the same
forward pass as the prompt's answer) to a score. ``judge fit`` learns one from rated items
(:mod:`.train`, :mod:`.fit`); the ``head`` method type scores with one (:mod:`.scorer`); the file holds the
weights and what binds them to one model and one prompt (:mod:`.head`).
"""

from .head import Head, read_head

__all__ = ["Head", "read_head"]
