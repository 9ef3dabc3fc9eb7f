"""Stub of letta.settings (pydantic-settings reading LETTA_* variables):
the one setting the copied modules read, with its default in
letta/settings.py (SummarizerSettings)."""
from types import SimpleNamespace

summarizer_settings = SimpleNamespace(partial_evict_summarizer_percentage=0.30)
