"""Stub of openai-python (Apache-2.0, github.com/openai/openai-python,
src/openai/types/beta/function_tool.py): the same fields; openai's BaseModel allows extra fields."""
from typing import Literal
from openai._models import BaseModel
from openai.types.shared.function_definition import FunctionDefinition
class FunctionTool(BaseModel):
    function: FunctionDefinition
    type: Literal["function"]
