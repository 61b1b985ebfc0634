"""Foundations every layer shares: error types, atomic output files, the extension registry, the template
sandbox, run settings, threading defaults and the distribution's own name."""
