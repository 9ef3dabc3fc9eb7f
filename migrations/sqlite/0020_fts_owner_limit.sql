-- Migration 0019 keys fts_archival and fts_messages by owner number ×
-- 2^40 + id, and never reuses an owner number: the 2^23 − 1st owner is
-- the last whose rowids fit in 63 bits. Past it the product overflowed
-- into a REAL and every first write of a new agent failed with "datatype
-- mismatch", which says nothing of why. The triggers number an owner with
-- INSERT OR IGNORE, so this fires only for a new name (an ignored insert
-- fires no AFTER trigger); its abort undoes the whole write.
CREATE TRIGGER fts_owners_limit AFTER INSERT ON fts_owners
WHEN new.no NOT BETWEEN 1 AND 8388607
BEGIN
    SELECT RAISE(ABORT, 'fts_owners: all 8388607 owner numbers are used (the full-text index keys rows by owner number × 2^40 + id, and numbers are never reused)');
END;
