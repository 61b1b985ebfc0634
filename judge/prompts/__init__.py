"""Prompt templates (Jinja files under ``prompts/``, rendered in a sandbox), their answer types, and what of
an item a prompt shows."""
