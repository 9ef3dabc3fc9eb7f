"""Stub of openai-python (Apache-2.0, github.com/openai/openai-python,
src/openai/types/shared/function_definition.py): the same fields; openai's BaseModel allows extra fields."""
from typing import Dict, Optional
from openai._models import BaseModel
class FunctionDefinition(BaseModel):
    name: str
    description: Optional[str] = None
    parameters: Optional[Dict[str, object]] = None
    strict: Optional[bool] = None
