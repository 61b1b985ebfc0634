"""Imports every built-in classic scorer module so that each registers itself."""

from . import (
    breakdown,  # noqa: F401
    embedding,  # noqa: F401
    fed_metric,  # noqa: F401
    glue_proxy,  # noqa: F401
    length,  # noqa: F401
    lm_likelihood,  # noqa: F401
    nsp,  # noqa: F401
    overlap,  # noqa: F401
    sentiment,  # noqa: F401
)
