"""Model backends behind one contract (see ``base.py``); ``registry.py`` maps names to them."""

from .base import Backend, Capabilities, Failure, HiddenState, LabelDist, Prompt, TokenLogprobs
from .registry import backend_names, create_backend, register_backend

__all__ = [
    "Backend",
    "Capabilities",
    "Failure",
    "HiddenState",
    "LabelDist",
    "Prompt",
    "TokenLogprobs",
    "backend_names",
    "create_backend",
    "register_backend",
]
