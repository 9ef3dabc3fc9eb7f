-- An UPDATE of archival entries or messages keeps agent_usage (0021) by
-- row triggers that fire only when a counted column is set, in place of
-- statement triggers that fired on every update. Re-indexing sets only
-- fts: a message appended to a batch re-indexes the two messages before
-- it, an archival entry the entries around it, and each of those
-- statements ran the usage trigger over its transition tables to find a
-- difference of zero, about a tenth of a message append's server CPU.
-- Inserts and deletes keep their statement triggers (one upsert per agent
-- for a batch). A row moved to another agent counts out of the old agent
-- and into the new one.
CREATE FUNCTION engram_agent_usage_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o BIGINT;
    n BIGINT;
BEGIN
    IF TG_ARGV[0] = 'archival' THEN
        o := octet_length(OLD.content) + octet_length(OLD.metadata_json) + (octet_length(OLD.tags_json) + 3 * GREATEST(octet_length(OLD.tags_json) - 2, 0)) + 256;
        n := octet_length(NEW.content) + octet_length(NEW.metadata_json) + (octet_length(NEW.tags_json) + 3 * GREATEST(octet_length(NEW.tags_json) - 2, 0)) + 256;
    ELSE
        o := octet_length(OLD.content) + octet_length(OLD.name) + octet_length(OLD.tool_calls_json) + octet_length(OLD.tool_call_id) + 256;
        n := octet_length(NEW.content) + octet_length(NEW.name) + octet_length(NEW.tool_calls_json) + octet_length(NEW.tool_call_id) + 256;
    END IF;
    IF OLD.agent = NEW.agent THEN
        IF n <> o THEN
            INSERT INTO agent_usage (agent, bytes) VALUES (NEW.agent, n - o)
                ON CONFLICT (agent) DO UPDATE SET bytes = agent_usage.bytes + EXCLUDED.bytes;
        END IF;
    ELSE
        INSERT INTO agent_usage (agent, bytes) VALUES (OLD.agent, -o)
            ON CONFLICT (agent) DO UPDATE SET bytes = agent_usage.bytes + EXCLUDED.bytes;
        INSERT INTO agent_usage (agent, bytes) VALUES (NEW.agent, n)
            ON CONFLICT (agent) DO UPDATE SET bytes = agent_usage.bytes + EXCLUDED.bytes;
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER agent_usage_archival_au ON archival;
CREATE TRIGGER agent_usage_archival_au AFTER UPDATE OF agent, content, metadata_json, tags_json ON archival
    FOR EACH ROW EXECUTE FUNCTION engram_agent_usage_row('archival');
DROP TRIGGER agent_usage_messages_au ON messages;
CREATE TRIGGER agent_usage_messages_au AFTER UPDATE OF agent, content, name, tool_calls_json, tool_call_id ON messages
    FOR EACH ROW EXECUTE FUNCTION engram_agent_usage_row('messages');
