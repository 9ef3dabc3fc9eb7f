-- Token counts of rendered prompt pieces, so a process that starts cold
-- does not tokenize every block again (BPE over 1,000 blocks is ~150 ms on
-- two cores). Keyed by tokenizer encoding and a 64-bit hash of the exact
-- text (FNV-1a over the bytes and the length). A cache: any row may be
-- deleted at any time; the table is trimmed to its newest rows.
CREATE TABLE token_counts (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    encoding TEXT    NOT NULL,
    hash     INTEGER NOT NULL,
    tokens   INTEGER NOT NULL
);
CREATE UNIQUE INDEX token_counts_key ON token_counts (encoding, hash);
