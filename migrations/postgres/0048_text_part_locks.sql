-- A stored text partition (search_text_parts) may be saved while writers
-- run beside the save. A save checks, in its transaction, that none of
-- the owner's rows changed since the part's position; a delete in flight
-- (its trigger run, its commit not yet) is invisible to that check, and
-- its trigger, run before the part existed, did not take it: the deleted
-- row's words would stay stored. So a save and every transaction whose
-- trigger drops an owner's part take one transaction-scoped advisory lock
-- per (kind, owner), the key engram_text_part_key gives (class 4 of
-- memory/postgres's lock keys: after the store's, the blocks' and the
-- agents' locks a writer already holds). Whichever comes second waits for
-- the other's commit and then sees it: the save the delete's log entry
-- (and is not written), the trigger's DELETE (a statement of its own,
-- with a snapshot of its own under READ COMMITTED) the saved part.
CREATE FUNCTION engram_text_part_key(kind INTEGER, owner TEXT) RETURNS BIGINT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (4::bigint << 56) | (hashtextextended(kind::text || ':' || owner, 0) & 72057594037927935)
$$;

-- The owners' locks are taken in key order, so two deleters never wait for
-- each other in a cycle.
CREATE OR REPLACE FUNCTION engram_text_parts_gone() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    k BIGINT;
BEGIN
    FOR k IN SELECT DISTINCT engram_text_part_key(TG_ARGV[0]::integer, agent) FROM old_rows ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(k);
    END LOOP;
    DELETE FROM search_text_parts p USING (SELECT DISTINCT agent FROM old_rows) o
        WHERE p.kind = TG_ARGV[0]::integer AND p.owner = o.agent;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION engram_text_parts_changed() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    a BIGINT := engram_text_part_key(TG_ARGV[0]::integer, OLD.agent);
    b BIGINT := engram_text_part_key(TG_ARGV[0]::integer, NEW.agent);
BEGIN
    PERFORM pg_advisory_xact_lock(LEAST(a, b));
    IF a <> b THEN
        PERFORM pg_advisory_xact_lock(GREATEST(a, b));
    END IF;
    DELETE FROM search_text_parts WHERE kind = TG_ARGV[0]::integer AND owner IN (OLD.agent, NEW.agent);
    RETURN NULL;
END $$;
