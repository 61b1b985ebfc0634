"""Imports every built-in classic scorer module so that each registers itself."""

from . import length  # noqa: F401
