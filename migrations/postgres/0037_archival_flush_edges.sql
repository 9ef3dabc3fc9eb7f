-- A batch's deferred index (engram_archival_flush, 0036) looks up fewer
-- places and logs each entry once.
--
-- The inserted entries of one conversation (or of one owner's stream)
-- that no other entry comes between, as a batch appended to its
-- conversation is, are neighbours of each other: only the first one's
-- entries before and the last one's entries after are looked up. In a
-- conversation where other entries come between (rows placed by hand, an
-- entry merged into an earlier duplicate), every inserted entry's are, as
-- before. The second entries after are looked up only from the first
-- ones that were not inserted (the entries after an inserted one are
-- among the first lookup's).
--
-- The UPDATE's statement trigger (search_text_archival_au) logs every
-- entry it re-indexes, so the function no longer logs them a second time.
CREATE OR REPLACE FUNCTION engram_archival_flush(ids BIGINT[]) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    g RECORD;
    n BIGINT;
    edges_before BIGINT[] := '{}';
    edges_after BIGINT[] := '{}';
    first BIGINT[];
    todo BIGINT[];
BEGIN
    PERFORM set_config('engram.archival_deferred', 'off', true);
    FOR g IN
        SELECT x.agent, x.conv, array_agg(x.id ORDER BY x.pos, x.id) AS members, min(x.pos) AS lo, max(x.pos) AS hi
        FROM (SELECT a.id, a.agent, engram_archival_conversation(a.metadata_json) AS conv, COALESCE(a.conversation_pos, a.id) AS pos
              FROM archival a WHERE a.id = ANY(ids)) x
        GROUP BY x.agent, x.conv
    LOOP
        IF g.conv IS NULL THEN
            SELECT count(*) INTO n FROM archival p
            WHERE p.agent = g.agent AND engram_archival_conversation(p.metadata_json) IS NULL
                AND COALESCE(p.conversation_pos, p.id) BETWEEN g.lo AND g.hi;
        ELSE
            SELECT count(*) INTO n FROM archival p
            WHERE p.agent = g.agent AND engram_archival_conversation(p.metadata_json) = g.conv
                AND COALESCE(p.conversation_pos, p.id) BETWEEN g.lo AND g.hi;
        END IF;
        IF n = cardinality(g.members) THEN
            edges_before := edges_before || g.members[1];
            edges_after := edges_after || g.members[cardinality(g.members)];
        ELSE
            edges_before := edges_before || g.members;
            edges_after := edges_after || g.members;
        END IF;
    END LOOP;
    SELECT array_agg(DISTINCT t) INTO first FROM (
        SELECT engram_archival_adjacent(i) AS t FROM unnest(edges_after) AS i) s
    WHERE t IS NOT NULL AND t <> ALL(ids);
    SELECT array_agg(DISTINCT t) INTO todo FROM (
        SELECT unnest(ids) AS t
        UNION SELECT engram_archival_preceding(i) FROM unnest(edges_before) AS i
        UNION SELECT unnest(first)
        UNION SELECT engram_archival_adjacent(i) FROM unnest(first) AS i) s
    WHERE t IS NOT NULL;
    UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
    WHERE id = ANY(todo);
END $$;
