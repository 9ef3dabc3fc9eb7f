// Package accesstoken holds engram serve's credentials: the access tokens
// that identify each caller of the server (an agent's, acting as that
// agent over MCP and /sync; a human's, for the web UI and approvals) and
// the one-time login links that let a person into the web UI with a human
// token. engram serve verifies them; the CLI's engram token makes, lists
// and revokes them.
//
// They are no part of package memory's API: a program that opens a store
// never sees serve's credentials. The rows live in the store's database
// (tables tokens and login_links, in migrations/sqlite and
// migrations/postgres), so every process on one database — several serve
// processes on one PostgreSQL, a CLI beside a running server — sees the
// same tokens, revocations and used links. [Of] reaches them through the
// store's own read pool, write transactions and clock
// (internal/storeaccess), on SQLite and PostgreSQL alike.
//
// Only a secret's SHA-256 is stored. A token is checked against its row
// on every [Tokens.Verify], so a revocation by any process holds from the
// next request; a login link is claimed by one conditional UPDATE, so of
// any number of concurrent uses, in any processes, exactly one signs in.
package accesstoken
