"""Stub of letta.local_llm.constants: the two names letta.schemas.message
imports, with their values in letta/local_llm/constants.py and
letta/settings.py (the original imports a chat wrapper and the settings)."""
INNER_THOUGHTS_KWARG = "thinking"
INNER_THOUGHTS_KWARG_VERTEX = "thinking"
