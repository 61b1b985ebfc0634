"""Chatbot logs as they are (docs/chat-logs.md): OpenAI's chat format (:mod:`.openai`), ShareGPT
(:mod:`.sharegpt`), tables and hub datasets (:mod:`.tabular`) and OpenTelemetry GenAI traces (:mod:`.otlp`),
each read into conversations (:mod:`.messages`), whose replies and whole dialogs become items
(:mod:`.items`); a file's format is told from its shape (:mod:`.files`), and its items load or stream
(:mod:`.reading`)."""

from __future__ import annotations

from .files import CHAT_FORMATS, sniff
from .items import INSTRUCTIONS_LABEL, LEVELS, ChatLevel
from .reading import ChatScan, load, scan

__all__ = ["CHAT_FORMATS", "INSTRUCTIONS_LABEL", "LEVELS", "ChatLevel", "ChatScan", "load", "scan", "sniff"]
