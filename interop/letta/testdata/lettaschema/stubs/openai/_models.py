"""Stub of openai-python (Apache-2.0, github.com/openai/openai-python,
src/openai/_models.py): the same fields; openai's BaseModel allows extra fields."""
import pydantic
class BaseModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
