-- One-time login links of engram serve's web UI (as SQLite's
-- 0017_login_links): only the secret's SHA-256 kept, times in Unix
-- nanoseconds, used_at 0 meaning not used yet.
CREATE TABLE login_links (
    id         BIGSERIAL PRIMARY KEY,
    hash       TEXT   NOT NULL UNIQUE,
    token_id   BIGINT NOT NULL REFERENCES tokens(id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX login_links_token ON login_links(token_id);
