"""Stub of the mcp package's Tool (letta's MCPTool subclasses it; no agent
file field has that type)."""
from typing import Any, Dict, Optional

from pydantic import BaseModel, ConfigDict


class Tool(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    description: Optional[str] = None
    inputSchema: Dict[str, Any]
