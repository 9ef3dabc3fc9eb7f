-- Token counts of rendered prompt pieces (as SQLite's 0006_token_counts):
-- a cache keyed by tokenizer encoding and a 64-bit hash of the text,
-- trimmed to its newest rows.
CREATE TABLE token_counts (
    id       BIGSERIAL PRIMARY KEY,
    encoding TEXT    NOT NULL,
    hash     BIGINT  NOT NULL,
    tokens   INTEGER NOT NULL
);
CREATE UNIQUE INDEX token_counts_key ON token_counts (encoding, hash);
