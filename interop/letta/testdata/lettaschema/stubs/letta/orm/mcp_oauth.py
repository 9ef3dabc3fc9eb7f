"""Stub of letta.orm.mcp_oauth (SQLAlchemy): the enum letta.schemas.mcp
imports, as defined there."""
from enum import Enum


class OAuthSessionStatus(str, Enum):
    """OAuth session status enumeration."""

    PENDING = "pending"
    AUTHORIZED = "authorized"
    ERROR = "error"
