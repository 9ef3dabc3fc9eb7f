-- A block's rendering is written whole on every write of the block, and
-- past about 2 kB PostgreSQL compresses it into TOAST: with the default
-- method, pglz, that compression was about a third of the server's CPU
-- for appends to a 20 kB block. lz4 compresses several times faster.
-- A server built without lz4 (or older than PostgreSQL 14) keeps pglz.
-- Rows keep the method they were written with until their next write.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE blocks ALTER COLUMN rendered SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    NULL;
END $$;
