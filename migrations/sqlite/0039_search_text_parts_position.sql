-- A stored part's log position beside its bytes (which hold it too), so
-- that one statement reads a part and the log since it: pos is the
-- lowest position of an entry the part may lack (its position's xmax, or
-- the first transaction running at it), and replay_max how
-- many rows logged since it a load replays before it reads the owner's
-- rows instead. A part is written with both; one without either is not
-- used.
--
-- The table is made again, the two before data: a column after a part's
-- bytes is read by walking their overflow pages, and the load's
-- statement reads pos and replay_max apart from the part. Its rows are a
-- cache (parts saved before this version are not used anyway: the
-- schema's version is part of what a part is checked against), and no
-- trigger is on it (those that delete from it are on the tables its rows
-- come from, and stay).
DROP TABLE search_text_parts;
CREATE TABLE search_text_parts (
    kind       INTEGER NOT NULL,
    owner      TEXT    NOT NULL,
    pos        BIGINT,
    replay_max BIGINT,
    data       BLOB    NOT NULL,
    PRIMARY KEY (kind, owner)
);
