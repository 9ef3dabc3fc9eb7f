-- One-time login links of engram serve's web UI (engram token login-url):
-- each lets the person of one human token sign in once, before it
-- expires. Only the SHA-256 of the link's secret is kept; times are Unix
-- nanoseconds, used_at 0 meaning not used yet. A link is consumed by one
-- UPDATE ... WHERE used_at = 0 AND expires_at > now, so of two uses
-- exactly one succeeds.
CREATE TABLE login_links (
    id         INTEGER PRIMARY KEY,
    hash       TEXT    NOT NULL UNIQUE,
    token_id   INTEGER NOT NULL REFERENCES tokens(id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX login_links_token ON login_links(token_id);
