-- engram_archival_fts looks up an entry's neighbours' contents by id. At
-- the end of an owner's stream or conversation those ids are NULL, and a
-- plan made for a NULL id reads nothing (its filter is false), so its
-- estimated cost is below the generic plan's and PostgreSQL planned the
-- three lookups again on every call: 0.29 ms of planning an insert, a
-- fifth of an archival insert's time on the server. Each lookup is one
-- primary-key probe whatever the id, so the function keeps one plan.
ALTER FUNCTION engram_archival_fts(BIGINT, TEXT, TEXT, TEXT, TEXT, BIGINT, BOOLEAN, BIGINT) SET plan_cache_mode = force_generic_plan;
