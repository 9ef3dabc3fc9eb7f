-- A stored text partition (search_text_parts) may be saved while writers
-- run beside the save. A save checks, in its transaction, that none of
-- the owner's rows changed since the part's position; a delete in flight
-- (its trigger run, its commit not yet) is invisible to that check, and
-- its trigger, run before the part existed, did not take it: the deleted
-- row's words would stay stored. So every trigger that drops an owner's
-- part first takes a transaction-scoped advisory lock, shared, of the
-- owner's bucket of that kind (engram_text_part_key: class 4 of
-- memory/postgres's lock keys, the kind, and one of 256 buckets of owner
-- names, so that a statement over many owners takes at most 256 locks of
-- the server's lock table): deleters never wait for each other there. A
-- save tries the same lock exclusively and, when a deleter holds it,
-- writes nothing (it never waits, so it is never part of a deadlock);
-- once it holds it, a deleter's trigger waits for the save's commit, and
-- its DELETE (a statement of its own, with a snapshot of its own under
-- READ COMMITTED) then sees the saved part and drops it. Owners sharing a
-- bucket only make a save skip, or a deleter wait for a save, more often.
CREATE FUNCTION engram_text_part_key(kind INTEGER, owner TEXT) RETURNS BIGINT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (4::bigint << 56) | (kind::bigint << 8) | (hashtextextended(owner, 0) & 255)
$$;

CREATE OR REPLACE FUNCTION engram_text_parts_gone() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(k)
        FROM (SELECT DISTINCT engram_text_part_key(TG_ARGV[0]::integer, agent) AS k FROM old_rows) o;
    DELETE FROM search_text_parts p USING (SELECT DISTINCT agent FROM old_rows) o
        WHERE p.kind = TG_ARGV[0]::integer AND p.owner = o.agent;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION engram_text_parts_changed() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(engram_text_part_key(TG_ARGV[0]::integer, OLD.agent));
    IF NEW.agent IS DISTINCT FROM OLD.agent THEN
        PERFORM pg_advisory_xact_lock_shared(engram_text_part_key(TG_ARGV[0]::integer, NEW.agent));
    END IF;
    DELETE FROM search_text_parts WHERE kind = TG_ARGV[0]::integer AND owner IN (OLD.agent, NEW.agent);
    RETURN NULL;
END $$;

-- A TRUNCATE of archival or messages fires no row trigger and logs
-- nothing: it takes the kind's parts with it. (A save whose check ran
-- after the TRUNCATE committed would still write its part: engram never
-- truncates, and docs/operations.md says to delete instead.)
CREATE FUNCTION engram_text_parts_truncated() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    DELETE FROM search_text_parts WHERE kind = TG_ARGV[0]::integer;
    RETURN NULL;
END $$;
CREATE TRIGGER search_text_parts_archival_truncate AFTER TRUNCATE ON archival
    FOR EACH STATEMENT EXECUTE FUNCTION engram_text_parts_truncated('2');
CREATE TRIGGER search_text_parts_messages_truncate AFTER TRUNCATE ON messages
    FOR EACH STATEMENT EXECUTE FUNCTION engram_text_parts_truncated('4');
