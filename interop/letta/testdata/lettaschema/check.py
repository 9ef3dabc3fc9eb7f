#!/usr/bin/env python3
"""Check a Letta agent file (.af) the way Letta's server imports it.

    python3 check.py [--json] FILE.af...

Runs the steps of Letta's import endpoint (POST /v1/agents/import,
letta/server/rest_api/routers/v1/agents.py import_agent and _import_agent)
with Letta's own code, copied unmodified under letta/ (see README.md):

 1. json.loads, and again when the document is a JSON string;
 2. the document must be an object with an "agents" list;
 3. AgentFileSchema.model_validate (letta/schemas/agent_file.py);
 4. AgentSerializationManager.import_file
    (letta/services/agent_serialization_manager.py): _validate_schema (id
    formats, duplicate ids, file references), then every entity turned into
    Letta's models (Tool, Block, Source, FileMetadata, CreateAgent, Message,
    GroupCreate) with the file's ids mapped to new database ids, and the
    agents' in-context message ids mapped to the messages created. The
    database managers are in-memory stand-ins (fakeserver.py) that fail
    where the real ones fail on a file's content.

Prints, per file, "ok" with what would be created, or Letta's error
(pydantic's validation errors included); with --json, a JSON list of
{"file", "ok", "message"}. Exits 0 when Letta would import every file, 1
when not, 2 on usage errors.
"""
import asyncio
import json
import os
import sys
import types

sys.dont_write_bytecode = True  # nothing written under testdata

HERE = os.path.dirname(os.path.abspath(__file__))


def _setup():
    sys.path.insert(0, os.path.join(HERE, "stubs"))
    sys.path.insert(0, HERE)
    pkg = types.ModuleType("letta")
    pkg.__path__ = [os.path.join(HERE, "letta"), os.path.join(HERE, "stubs", "letta")]
    pkg.__version__ = "0.16.8"
    sys.modules["letta"] = pkg

    import fakeserver

    def module(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m

    f = fakeserver
    module("letta.services.message_manager", MessageManager=f.MessageManager)
    module("letta.services.agent_manager", AgentManager=f.AgentManager)
    module("letta.services.block_manager", BlockManager=f.BlockManager)
    module("letta.services.file_manager", FileManager=f.FileManager)
    module("letta.services.files_agents_manager", FileAgentManager=f.FileAgentManager)
    module("letta.services.group_manager", GroupManager=f.GroupManager)
    module("letta.services.mcp_manager", MCPManager=f.MCPManager)
    module("letta.services.source_manager", SourceManager=f.SourceManager)
    module("letta.services.tool_manager", ToolManager=f.ToolManager)
    module("letta.services.file_processor.embedder.openai_embedder", OpenAIEmbedder=f.OpenAIEmbedder)
    module("letta.services.file_processor.embedder.pinecone_embedder", PineconeEmbedder=f.PineconeEmbedder)
    module("letta.services.file_processor.file_processor", FileProcessor=f.FileProcessor)
    module("letta.services.file_processor.parser.markitdown_parser", MarkitdownFileParser=f.MarkitdownFileParser)
    module("letta.services.file_processor.parser.mistral_parser", MistralFileParser=f.MistralFileParser)
    module("letta.helpers.pinecone_utils", should_use_pinecone=f.should_use_pinecone)
    module("letta.helpers.tpuf_client", should_use_tpuf=f.should_use_tpuf)

    import letta.settings
    import letta.utils

    letta.settings.settings = f.settings
    letta.utils.safe_create_task = f.safe_create_task
    letta.utils.get_latest_alembic_revision = f.get_latest_alembic_revision


def check(data):
    """Returns (ok, message)."""
    from pydantic import ValidationError

    import fakeserver
    from letta.schemas.agent_file import AgentFileSchema
    from letta.schemas.user import User
    from letta.services.agent_serialization_manager import AgentSerializationManager

    # 1-2: import_agent.
    try:
        agent_json = json.loads(data)
        if isinstance(agent_json, str):
            agent_json = json.loads(agent_json)
    except json.JSONDecodeError:
        return False, "Corrupted agent file format."
    if not (isinstance(agent_json, dict) and "agents" in agent_json and isinstance(agent_json.get("agents"), list)):
        return False, "Legacy AgentSchema format is deprecated. Please use the new AgentFileSchema format with 'agents' field."
    # 3: _import_agent.
    try:
        schema = AgentFileSchema.model_validate(agent_json)
    except ValidationError as e:
        return False, str(e)
    # 4: import_file, as _import_agent calls it by default.
    store = fakeserver.Store()
    mgr = AgentSerializationManager(
        agent_manager=fakeserver.AgentManager(store),
        tool_manager=fakeserver.ToolManager(store),
        source_manager=fakeserver.SourceManager(store),
        block_manager=fakeserver.BlockManager(store),
        group_manager=fakeserver.GroupManager(store),
        mcp_manager=fakeserver.MCPManager(store),
        file_manager=fakeserver.FileManager(store),
        file_agent_manager=fakeserver.FileAgentManager(store),
        message_manager=fakeserver.MessageManager(store),
    )
    actor = User(name="checker")
    try:
        result = asyncio.run(mgr.import_file(schema=schema, actor=actor, append_copy_suffix=True, override_existing_tools=True))
    except Exception as e:  # import_file wraps every failure in AgentFileImportError
        cause = e.__cause__
        if isinstance(cause, ValidationError):
            return False, f"{e}"
        return False, f"{type(e).__name__}: {e}"
    if not result.success:
        return False, f"Import failed: {result.message}. Errors: {', '.join(result.errors)}"
    in_ctx = sum(len(a.message_ids) for a in store.agents.values())
    return True, (
        f"ok: {len(store.agents)} agents, {len(store.blocks)} blocks, {len(store.tools)} tools, "
        f"{len(store.messages)} messages ({in_ctx} in context), {len(store.groups)} groups, "
        f"{len(store.sources)} sources, {len(store.files)} files"
    )


def main(argv):
    args = argv[1:]
    as_json = bool(args) and args[0] == "--json"
    if as_json:
        args = args[1:]
    if not args:
        print("usage: check.py [--json] FILE.af...", file=sys.stderr)
        return 2
    _setup()
    import logging

    logging.disable(logging.CRITICAL)
    results = []
    for path in args:
        with open(path, "rb") as fh:
            ok, msg = check(fh.read())
        results.append({"file": path, "ok": ok, "message": msg})
    if as_json:
        json.dump(results, sys.stdout)
        print()
    else:
        for r in results:
            print(f"{r['file']}: {r['message']}", file=sys.stdout if r["ok"] else sys.stderr)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
