"""Stub of fastapi's Path and Query.

fastapi.params.Path and Query are pydantic FieldInfo subclasses: in
Annotated[str, Path(pattern=...)] pydantic enforces their pattern and
lengths. pydantic.Field builds the same FieldInfo, so letta.validators'
AgentId, BlockId, ... keep their constraints inside pydantic models.
"""
import pydantic


def Path(default=..., **kwargs):
    return pydantic.Field(default, **kwargs)


def Query(default=None, **kwargs):
    return pydantic.Field(default, **kwargs)
