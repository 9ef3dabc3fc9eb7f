-- Access tokens for `engram serve` (as SQLite's 0016_tokens): an agent's or
-- a person's, only the secret's SHA-256 kept, times in Unix nanoseconds
-- with 0 meaning never.
CREATE TABLE tokens (
    id           BIGSERIAL PRIMARY KEY,
    hash         TEXT    NOT NULL UNIQUE,
    agent        TEXT    NOT NULL DEFAULT '',
    human        TEXT    NOT NULL DEFAULT '',
    name         TEXT    NOT NULL DEFAULT '',
    read_only    INTEGER NOT NULL DEFAULT 0,
    created_at   BIGINT  NOT NULL,
    expires_at   BIGINT  NOT NULL DEFAULT 0,
    last_used_at BIGINT  NOT NULL DEFAULT 0,
    revoked_at   BIGINT  NOT NULL DEFAULT 0,
    CHECK ((agent = '') <> (human = ''))
);
