-- A stored part's log position beside its bytes (which hold it too), so
-- that one statement reads a part and the log since it: pos is the
-- lowest position of an entry the part may lack (its position's xmax, or
-- the first transaction running at it), and replay_max how
-- many rows logged since it a load replays before it reads the owner's
-- rows instead. A part is written with both; one without either is not
-- used (parts saved before this version are not used anyway: the
-- schema's version is part of what a part is checked against).
ALTER TABLE search_text_parts ADD COLUMN pos BIGINT, ADD COLUMN replay_max BIGINT;
