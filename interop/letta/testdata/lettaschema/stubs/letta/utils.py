"""Stub of letta.utils (which imports much of the server): the names the
copied schema modules import. Functions schema validation never calls
raise, so a check that reached them would fail loudly."""
import logging
from typing import Optional

from letta.constants import DEFAULT_CORE_MEMORY_SOURCE_CHAR_LIMIT, DEFAULT_MAX_FILES_OPEN


def get_logger(name=None):
    return logging.getLogger(name or "letta")


def _not_in_checker(name):
    def f(*args, **kwargs):
        raise NotImplementedError(f"letta.utils.{name} is stubbed in the schema checker")

    f.__name__ = name
    return f


bounded_gather = _not_in_checker("bounded_gather")
parse_json = _not_in_checker("parse_json")
parse_json_or_wrap_raw = _not_in_checker("parse_json_or_wrap_raw")
sanitize_tool_call_id = _not_in_checker("sanitize_tool_call_id")
validate_function_response = _not_in_checker("validate_function_response")


def create_random_username() -> str:
    """letta.utils draws an adjective and a noun; a fixed name here."""
    return "ImportedAgent"


# Copied from letta/utils.py (AgentState's validator calls it).
def calculate_file_defaults_based_on_context_window(context_window: Optional[int]) -> tuple[int, int]:
    """Calculate reasonable defaults for max_files_open and per_file_view_window_char_limit
    based on the model's context window size.

    Args:
        context_window: The context window size of the model. If None, returns conservative defaults.

    Returns:
        A tuple of (max_files_open, per_file_view_window_char_limit)
    """
    if not context_window:
        # If no context window info, use conservative defaults
        return DEFAULT_MAX_FILES_OPEN, DEFAULT_CORE_MEMORY_SOURCE_CHAR_LIMIT

    # Define defaults based on context window ranges
    # Assuming ~4 chars per token
    # Available chars = available_tokens * 4

    # TODO: Check my math here
    if context_window <= 8_000:  # Small models (4K-8K)
        return 3, 5_000  # ~3.75K tokens
    elif context_window <= 32_000:  # Medium models (16K-32K)
        return 5, 15_000  # ~18.75K tokens
    elif context_window <= 128_000:  # Large models (100K-128K)
        return 10, 25_000  # ~62.5K tokens
    elif context_window <= 200_000:  # Very large models (128K-200K)
        return 10, 40_000  # ~100k tokens
    else:  # Extremely large models (200K+)
        return 15, 40_000  # ~1505k tokens
