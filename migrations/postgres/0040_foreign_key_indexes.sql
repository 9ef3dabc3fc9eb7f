-- An index on each column that references a row, so that deleting the
-- referenced row finds the rows that name it without reading the table.
--
-- archival.superseded_by and summaries.previous_id reference rows of their
-- own tables (ON DELETE SET NULL) and had no index: the foreign key's
-- action (UPDATE ... SET superseded_by = NULL WHERE superseded_by = $1)
-- read the whole archival table sequentially, inside the deleting
-- transaction, so one delete of an archival entry took time in
-- proportion to every agent's entries. Only superseded rows (summaries
-- that follow another) hold a value: the indexes are partial, and the
-- action's equality implies the column is not NULL.
-- (IF NOT EXISTS: a database whose version was set back, as a test of an
-- older layout does, runs this again.)

CREATE INDEX IF NOT EXISTS archival_superseded_by ON archival (superseded_by) WHERE superseded_by IS NOT NULL;
CREATE INDEX IF NOT EXISTS summaries_previous_id ON summaries (previous_id) WHERE previous_id IS NOT NULL;
