-- 0018 indexed the conversation an entry names by its value, and a btree
-- entry holds at most 2704 bytes: an entry whose "conversation" or
-- "session" was a longer string (a pasted title, a long token) could not
-- be stored at all, where before 0018 (and on SQLite) it could. The value
-- is only compared for equality (an owner's entries naming the same one
-- are neighbours), so a long one is kept as its SHA-256: the same
-- entries are neighbours, every key fits. (A short value spelling out
-- "sha256:" and the digest of a long one joins its conversation; both are
-- the same owner's own metadata: no other owner's entry can be reached.)
CREATE OR REPLACE FUNCTION engram_archival_conversation(meta TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN octet_length(c) > 1024 THEN 'sha256:' || encode(sha256(convert_to(c, 'UTF8')), 'hex') ELSE c END
    FROM (SELECT COALESCE(
        CASE WHEN jsonb_typeof(meta::jsonb -> 'conversation') = 'string' THEN NULLIF(meta::jsonb ->> 'conversation', '') END,
        CASE WHEN jsonb_typeof(meta::jsonb -> 'session') = 'string' THEN NULLIF(meta::jsonb ->> 'session', '') END) AS c) v
$$;

-- The index holds the function's old results (no stored value changes:
-- no entry could name a value this long before).
REINDEX INDEX archival_conversation;
