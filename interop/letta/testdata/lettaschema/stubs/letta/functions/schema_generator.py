"""Stub of letta.functions.schema_generator (needs docstring_parser): the
name letta.schemas.tool imports, used only to make tools from MCP servers."""


def generate_tool_schema_for_mcp(*args, **kwargs):
    raise NotImplementedError("letta.functions.schema_generator is stubbed in the schema checker")
