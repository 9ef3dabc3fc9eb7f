-- incarnation tells a block from every earlier block with the same id
-- (see the SQLite migration 0010: PostgreSQL's identity column never
-- reuses an id, but the column keeps both schemas and the shared queries
-- alike). New blocks get a random non-zero value; 0 marks rows made before.
ALTER TABLE blocks ADD COLUMN incarnation BIGINT NOT NULL DEFAULT 0;
