-- Access tokens for `engram serve`: a token acts as one agent (agent set)
-- or lets one person into the web UI (human set). Only the SHA-256 of the
-- secret is kept, so a copy of the database does not hand out access;
-- times are Unix nanoseconds, 0 meaning never (expiry, use, revocation).
CREATE TABLE tokens (
    id           INTEGER PRIMARY KEY,
    hash         TEXT    NOT NULL UNIQUE,
    agent        TEXT    NOT NULL DEFAULT '',
    human        TEXT    NOT NULL DEFAULT '',
    name         TEXT    NOT NULL DEFAULT '',
    read_only    INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL DEFAULT 0,
    last_used_at INTEGER NOT NULL DEFAULT 0,
    revoked_at   INTEGER NOT NULL DEFAULT 0,
    CHECK ((agent = '') <> (human = ''))
);
