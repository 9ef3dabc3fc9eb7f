"""In-memory stand-ins for the database managers Letta's
AgentSerializationManager.import_file calls (letta/services/*_manager.py
use SQLAlchemy). They keep what is created and fail where the real managers
fail on what an agent file can get wrong; everything else import_file does
is Letta's own code (letta/services/agent_serialization_manager.py).

check.py registers them under the module names the copied modules import.
"""
import uuid
from types import SimpleNamespace


class Store:
    def __init__(self):
        self.tools = {}  # id -> Tool
        self.blocks = {}
        self.sources = {}
        self.files = {}
        self.agents = {}  # id -> agent record
        self.messages = {}
        self.groups = {}


def _new_id(prefix):
    return f"{prefix}-{uuid.uuid4()}"


class ToolManager:
    def __init__(self, store):
        self.store = store

    async def bulk_upsert_tools_async(self, pydantic_tools, actor, override_existing_tools=True):
        # ToolManager upserts by name: two tools of one name are one tool.
        by_name = {}
        for t in pydantic_tools:
            by_name[t.name] = t
        for t in by_name.values():
            self.store.tools[t.id] = t
        return list(by_name.values())


class BlockManager:
    def __init__(self, store):
        self.store = store

    async def batch_create_blocks_async(self, pydantic_blocks, actor):
        for b in pydantic_blocks:
            self.store.blocks[b.id] = b
        return list(pydantic_blocks)


class SourceManager:
    def __init__(self, store):
        self.store = store

    async def get_existing_source_names(self, names, actor):
        return {s.name for s in self.store.sources.values() if s.name in names}

    async def bulk_upsert_sources_async(self, pydantic_sources, actor):
        for s in pydantic_sources:
            self.store.sources[s.id] = s
        return list(pydantic_sources)


class FileManager:
    def __init__(self, store):
        self.store = store

    async def create_file(self, file_metadata, actor, text=None):
        if file_metadata.source_id not in self.store.sources:
            raise ValueError(f"source {file_metadata.source_id} not found")
        self.store.files[file_metadata.id] = file_metadata
        return file_metadata

    async def get_file_by_id(self, file_id, actor, include_content=False):
        return self.store.files[file_id]


class AgentManager:
    """create_agent_async's checks on what the file gives
    (letta/services/agent_manager.py): llm_config is required, and the
    tools, blocks and sources named by id must exist."""

    def __init__(self, store):
        self.store = store

    async def create_agent_async(self, agent_create, actor, _test_only_force_id=None, _init_with_no_messages=False, ignore_invalid_tools=False):
        if not agent_create.llm_config:
            raise ValueError("llm_config is required")
        missing = set(agent_create.tool_ids or []) - set(self.store.tools)
        if missing and not ignore_invalid_tools:
            raise ValueError(f"Tools not found by id:   {missing}")
        missing = set(agent_create.block_ids or []) - set(self.store.blocks)
        if missing:
            raise ValueError(f"Blocks not found by id: {missing}")
        source_ids = agent_create.folder_ids if agent_create.folder_ids else (agent_create.source_ids or [])
        missing = set(source_ids) - set(self.store.sources)
        if missing:
            raise ValueError(f"Sources not found by id: {missing}")
        agent = SimpleNamespace(id=_new_id("agent"), project_id=agent_create.project_id, template_id=agent_create.template_id,
                                message_ids=[], create=agent_create)
        self.store.agents[agent.id] = agent
        return agent

    async def get_agent_by_id_async(self, agent_id, actor):
        return self.store.agents[agent_id]

    async def update_message_ids_async(self, agent_id, message_ids, actor):
        missing = [m for m in message_ids if m not in self.store.messages]
        if missing:
            raise ValueError(f"Messages not found: {missing}")
        self.store.agents[agent_id].message_ids = list(message_ids)


class MessageManager:
    def __init__(self, store=None):
        self.store = store

    async def create_many_messages_async(self, pydantic_msgs, actor, project_id=None, template_id=None, **kwargs):
        for m in pydantic_msgs:
            if m.agent_id not in self.store.agents:
                raise ValueError(f"agent {m.agent_id} of message {m.id} not found")
            self.store.messages[m.id] = m
        return list(pydantic_msgs)

    async def delete_message_by_id_async(self, message_id, actor):
        self.store.messages.pop(message_id, None)


class FileAgentManager:
    def __init__(self, store):
        self.store = store

    async def attach_files_bulk(self, agent_id, files_metadata, visible_content_map, actor, max_files_open=None):
        return list(files_metadata)


class GroupManager:
    def __init__(self, store):
        self.store = store

    async def create_group_async(self, group, actor):
        for a in group.agent_ids:
            if a not in self.store.agents:
                raise ValueError(f"agent {a} of the group not found")
        g = SimpleNamespace(id=_new_id("group"), create=group)
        self.store.groups[g.id] = g
        return g


class MCPManager:
    def __init__(self, store):
        self.store = store

    async def create_or_update_mcp_server(self, server, actor):
        return SimpleNamespace(id=_new_id("mcp_server"), server=server)


class _NoFileProcessing:
    """Files' chunking and embedding run in the background after the
    import; the checker does not embed."""

    def __init__(self, *args, **kwargs):
        pass

    async def process(self, *args, **kwargs):
        return []


OpenAIEmbedder = PineconeEmbedder = FileProcessor = MarkitdownFileParser = MistralFileParser = _NoFileProcessing


def should_use_pinecone(*args, **kwargs):
    return False


def should_use_tpuf(*args, **kwargs):
    return False


def safe_create_task(coro, label=None, **kwargs):
    coro.close()
    return None


def get_latest_alembic_revision(*args, **kwargs):
    return None


settings = SimpleNamespace(mistral_api_key=None)
