"""Model backends behind one contract (see ``base.py``); ``registry.py`` maps names to them."""

from .base import Backend, Capabilities, Failure, LabelDist, Prompt
from .registry import backend_names, create_backend, register_backend

__all__ = [
    "Backend",
    "Capabilities",
    "Failure",
    "LabelDist",
    "Prompt",
    "backend_names",
    "create_backend",
    "register_backend",
]
