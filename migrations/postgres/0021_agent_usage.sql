-- What each agent's archival entries and messages hold, kept as they are
-- written, as on SQLite (migration 0024): a per-agent storage quota
-- (memory.Options.AgentQuotaBytes) is checked by reading one row rather
-- than summing the agent's rows on every write. The triggers keep it in
-- the writer's own transaction (which holds the advisory write lock), once
-- per statement (a batch of 100 rows is one upsert per agent), on every way
-- rows come and go: the store's inserts, Import, log rotation, deletes,
-- edits by hand.
--
-- An entry counts the bytes of its content, metadata_json and tags_json,
-- the tags beyond an empty list four times (they are also stored as text,
-- tag rows and indexed), a
-- message those of its content, name, tool_calls_json and tool_call_id,
-- and each row 256 more for its row and index entries
-- (memory.UsageRowBytes). A superseded entry is still stored, and still
-- counts.

CREATE TABLE agent_usage (
    agent TEXT   PRIMARY KEY,
    bytes BIGINT NOT NULL DEFAULT 0
);

INSERT INTO agent_usage (agent, bytes)
    SELECT agent, SUM(b) FROM (
        SELECT agent, octet_length(content) + octet_length(metadata_json) + (octet_length(tags_json) + 3 * GREATEST(octet_length(tags_json) - 2, 0)) + 256 AS b FROM archival
        UNION ALL
        SELECT agent, octet_length(content) + octet_length(name) + octet_length(tool_calls_json) + octet_length(tool_call_id) + 256 FROM messages) r
    GROUP BY agent;

-- TG_ARGV[0] is the table: 'archival' or 'messages'. An UPDATE adds the
-- difference (the store's supersessions change no counted column, and
-- write nothing here).
CREATE FUNCTION engram_agent_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_ARGV[0] = 'archival' THEN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO agent_usage (agent, bytes)
                SELECT agent, SUM(octet_length(content) + octet_length(metadata_json) + (octet_length(tags_json) + 3 * GREATEST(octet_length(tags_json) - 2, 0)) + 256)
                FROM new_rows GROUP BY agent
                ON CONFLICT (agent) DO UPDATE SET bytes = agent_usage.bytes + EXCLUDED.bytes;
        ELSIF TG_OP = 'DELETE' THEN
            UPDATE agent_usage u SET bytes = u.bytes - d.b
                FROM (SELECT agent, SUM(octet_length(content) + octet_length(metadata_json) + (octet_length(tags_json) + 3 * GREATEST(octet_length(tags_json) - 2, 0)) + 256) AS b
                      FROM old_rows GROUP BY agent) d
                WHERE u.agent = d.agent;
        ELSE
            INSERT INTO agent_usage (agent, bytes)
                SELECT agent, SUM(b) FROM (
                    SELECT agent, octet_length(content) + octet_length(metadata_json) + (octet_length(tags_json) + 3 * GREATEST(octet_length(tags_json) - 2, 0)) + 256 AS b FROM new_rows
                    UNION ALL
                    SELECT agent, -(octet_length(content) + octet_length(metadata_json) + (octet_length(tags_json) + 3 * GREATEST(octet_length(tags_json) - 2, 0)) + 256) FROM old_rows) x
                GROUP BY agent HAVING SUM(b) <> 0
                ON CONFLICT (agent) DO UPDATE SET bytes = agent_usage.bytes + EXCLUDED.bytes;
        END IF;
    ELSE
        IF TG_OP = 'INSERT' THEN
            INSERT INTO agent_usage (agent, bytes)
                SELECT agent, SUM(octet_length(content) + octet_length(name) + octet_length(tool_calls_json) + octet_length(tool_call_id) + 256)
                FROM new_rows GROUP BY agent
                ON CONFLICT (agent) DO UPDATE SET bytes = agent_usage.bytes + EXCLUDED.bytes;
        ELSIF TG_OP = 'DELETE' THEN
            UPDATE agent_usage u SET bytes = u.bytes - d.b
                FROM (SELECT agent, SUM(octet_length(content) + octet_length(name) + octet_length(tool_calls_json) + octet_length(tool_call_id) + 256) AS b
                      FROM old_rows GROUP BY agent) d
                WHERE u.agent = d.agent;
        ELSE
            INSERT INTO agent_usage (agent, bytes)
                SELECT agent, SUM(b) FROM (
                    SELECT agent, octet_length(content) + octet_length(name) + octet_length(tool_calls_json) + octet_length(tool_call_id) + 256 AS b FROM new_rows
                    UNION ALL
                    SELECT agent, -(octet_length(content) + octet_length(name) + octet_length(tool_calls_json) + octet_length(tool_call_id) + 256) FROM old_rows) x
                GROUP BY agent HAVING SUM(b) <> 0
                ON CONFLICT (agent) DO UPDATE SET bytes = agent_usage.bytes + EXCLUDED.bytes;
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER agent_usage_archival_ai AFTER INSERT ON archival
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_agent_usage('archival');
CREATE TRIGGER agent_usage_archival_au AFTER UPDATE ON archival
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_agent_usage('archival');
CREATE TRIGGER agent_usage_archival_ad AFTER DELETE ON archival
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_agent_usage('archival');

CREATE TRIGGER agent_usage_messages_ai AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_agent_usage('messages');
CREATE TRIGGER agent_usage_messages_au AFTER UPDATE ON messages
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_agent_usage('messages');
CREATE TRIGGER agent_usage_messages_ad AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_agent_usage('messages');
