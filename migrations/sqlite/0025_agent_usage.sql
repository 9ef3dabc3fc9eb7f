-- What each agent's archival entries and messages hold, kept as they are
-- written, so that a per-agent storage quota (memory.Options.
-- AgentQuotaBytes) is checked by reading one row rather than summing the
-- agent's rows on every write. The triggers below keep it in the writer's
-- own transaction, on every way rows come and go (the store's inserts,
-- Import, log rotation, deletes, edits by hand).
--
-- An entry counts the bytes of its content, metadata_json and tags_json,
-- the tags beyond an empty list four times (they are also stored as text,
-- tag rows and indexed), a
-- message those of its content, name, tool_calls_json and tool_call_id,
-- and each row 256 more for its row and index entries
-- (memory.UsageRowBytes): a quota bounds rows, not only text. A
-- superseded entry is still stored, and still counts.

CREATE TABLE agent_usage (
    agent TEXT    PRIMARY KEY,
    bytes INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

INSERT INTO agent_usage (agent, bytes)
    SELECT agent, SUM(b) FROM (
        SELECT agent, octet_length(content) + octet_length(metadata_json) + (octet_length(tags_json) + 3 * max(octet_length(tags_json) - 2, 0)) + 256 AS b FROM archival
        UNION ALL
        SELECT agent, octet_length(content) + octet_length(name) + octet_length(tool_calls_json) + octet_length(tool_call_id) + 256 FROM messages)
    GROUP BY agent;

CREATE TRIGGER agent_usage_archival_ai AFTER INSERT ON archival BEGIN
    INSERT INTO agent_usage (agent, bytes)
        VALUES (new.agent, octet_length(new.content) + octet_length(new.metadata_json) + (octet_length(new.tags_json) + 3 * max(octet_length(new.tags_json) - 2, 0)) + 256)
        ON CONFLICT (agent) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER agent_usage_archival_ad AFTER DELETE ON archival BEGIN
    UPDATE agent_usage SET bytes = bytes - (octet_length(old.content) + octet_length(old.metadata_json) + (octet_length(old.tags_json) + 3 * max(octet_length(old.tags_json) - 2, 0)) + 256)
        WHERE agent = old.agent;
END;

-- The store never rewrites these columns (supersession sets valid_to and
-- superseded_by); an edit by hand keeps the count right.
CREATE TRIGGER agent_usage_archival_au AFTER UPDATE OF agent, content, metadata_json, tags_json ON archival BEGIN
    UPDATE agent_usage SET bytes = bytes - (octet_length(old.content) + octet_length(old.metadata_json) + (octet_length(old.tags_json) + 3 * max(octet_length(old.tags_json) - 2, 0)) + 256)
        WHERE agent = old.agent;
    INSERT INTO agent_usage (agent, bytes)
        VALUES (new.agent, octet_length(new.content) + octet_length(new.metadata_json) + (octet_length(new.tags_json) + 3 * max(octet_length(new.tags_json) - 2, 0)) + 256)
        ON CONFLICT (agent) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER agent_usage_messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO agent_usage (agent, bytes)
        VALUES (new.agent, octet_length(new.content) + octet_length(new.name) + octet_length(new.tool_calls_json) + octet_length(new.tool_call_id) + 256)
        ON CONFLICT (agent) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER agent_usage_messages_ad AFTER DELETE ON messages BEGIN
    UPDATE agent_usage SET bytes = bytes - (octet_length(old.content) + octet_length(old.name) + octet_length(old.tool_calls_json) + octet_length(old.tool_call_id) + 256)
        WHERE agent = old.agent;
END;

CREATE TRIGGER agent_usage_messages_au AFTER UPDATE OF agent, content, name, tool_calls_json, tool_call_id ON messages BEGIN
    UPDATE agent_usage SET bytes = bytes - (octet_length(old.content) + octet_length(old.name) + octet_length(old.tool_calls_json) + octet_length(old.tool_call_id) + 256)
        WHERE agent = old.agent;
    INSERT INTO agent_usage (agent, bytes)
        VALUES (new.agent, octet_length(new.content) + octet_length(new.name) + octet_length(new.tool_calls_json) + octet_length(new.tool_call_id) + 256)
        ON CONFLICT (agent) DO UPDATE SET bytes = bytes + excluded.bytes;
END;
