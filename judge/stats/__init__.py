"""Statistics against human ratings: correlations with conversation-bootstrap intervals, pairwise agreement,
and the agreement of the raters themselves."""
