"""Stub of openai-python (Apache-2.0, github.com/openai/openai-python,
src/openai/types/chat/chat_completion_message_function_tool_call.py): the same fields; openai's BaseModel allows extra fields."""
from typing import Literal
from openai._models import BaseModel
class Function(BaseModel):
    arguments: str
    name: str
class ChatCompletionMessageFunctionToolCall(BaseModel):
    id: str
    function: Function
    type: Literal["function"]
ChatCompletionMessageToolCall = ChatCompletionMessageFunctionToolCall
