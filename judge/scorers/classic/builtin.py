"""Imports every built-in classic scorer module so that each registers itself."""

from . import length  # noqa: F401
from . import lm_likelihood  # noqa: F401
from . import fed_metric  # noqa: F401
from . import overlap  # noqa: F401
from . import sentiment  # noqa: F401
from . import embedding  # noqa: F401
from . import nsp  # noqa: F401
from . import breakdown  # noqa: F401
from . import glue_proxy  # noqa: F401
