package memory

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"github.com/engram-go/engram/internal/redact"
	"github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// Backend is where a Cache persists: one SQL engine behind database/sql.
// What a store means (CRDT documents, the LRU, permissions, approvals,
// rendering, attribution) lives in Cache and is the same on every engine;
// a Backend owns what differs between engines: connections, the write
// transaction and its lock, schema migrations, how a statement's "?"
// placeholders reach the server, error classification, and the engine
// the search legs run on. memory/sqlite and memory/postgres implement it.
//
// The row statements themselves stay in this package, written once in the
// SQL both engines accept: the two schemas keep the same tables and
// columns, so a second copy of every statement per engine would only be a
// place for the two to drift apart.
type Backend interface {
	// Name is the engine: "sqlite" or "postgres".
	Name() string
	// DB is the pool reads use. Statements use "?" placeholders.
	DB() *sql.DB
	// Write runs fn in a transaction holding the store's write lock,
	// committing when fn returns nil. Only taking the lock is retried
	// (until the backend's lock timeout), so fn runs at most once; a ctx
	// that ends while waiting for the lock returns its error with nothing
	// written; once fn runs, the transaction completes whatever ctx does.
	Write(ctx context.Context, fn func(*sql.Tx) error) error
	// IsConflict reports whether err is a unique-constraint violation.
	IsConflict(err error) bool
	// SearchDialect is the engine's SQL for the search index.
	SearchDialect() search.Dialect
	// Close closes the pools.
	Close() error
}

// BlockNotifier is implemented by backends that push block changes to
// every process (PostgreSQL's LISTEN/NOTIFY). A Cache on such a backend
// serves cache hits without asking the database whether the block changed;
// it drops that trust whenever the notification channel is not live.
type BlockNotifier interface {
	// WatchBlocks calls changed with the id of each block another writer
	// committed (or deleted), and live(false) when notifications may have
	// been missed (a lost connection) and live(true) once they flow again.
	// It returns when ctx ends.
	WatchBlocks(ctx context.Context, changed func(id int64), live func(bool))
}

// openBackend picks the backend from Open's target: a file path,
// ":memory:" or sqlite://PATH → SQLite; postgres:// or postgresql:// or a
// libpq keyword/value string ("host=… dbname=…") → PostgreSQL. Any other
// scheme is refused rather than taken for a relative path (which once made
// "postgres://…" a directory named "postgres:"), and so is a would-be file
// name holding "password=" (a keyword DSN once became a SQLite file whose
// name held the password). The name returned is redacted.
func openBackend(ctx context.Context, target string, o Options) (Backend, string, error) {
	kind, path := classifyTarget(target)
	switch kind {
	case targetSQLite:
		if strings.TrimSpace(path) == "" {
			return nil, "", invalidArg("store path is empty")
		}
		b, err := sqlite.Open(ctx, path, &sqlite.Options{BusyTimeout: o.BusyTimeout})
		return b, redactURL(path), err
	case targetPostgres:
		b, err := postgres.Open(ctx, target, &postgres.Options{LockTimeout: o.BusyTimeout, Logger: o.Logger})
		if err != nil && !strings.ContainsAny(target, ":/ \t\n\r") && !passwordKey.MatchString(target) {
			// One word, "host=x.db": it may have been meant as a file name
			// (no password in it, so it may be shown).
			err = fmt.Errorf("%w\n(read as a PostgreSQL keyword DSN; for a SQLite file of that name use ./%s or sqlite://%s)", err, target, target)
		}
		return b, redactURL(target), err
	case targetSecretFile:
		return nil, "", invalidArg("store %q looks like a connection string, not a file name (a PostgreSQL keyword DSN starts with host=, dbname=, user=, ...; a SQLite file name may not hold \"password=\")", redactURL(target))
	}
	return nil, "", fmt.Errorf("%w: %q (want a file path, \":memory:\", sqlite://PATH, postgres://… or host=… dbname=…)", ErrUnknownScheme, redactURL(target))
}

type targetKind int

const (
	targetUnknown    targetKind = iota // an unknown URL scheme
	targetSQLite                       // path is the file (or ":memory:")
	targetPostgres                     // a postgres:// URL or a keyword DSN
	targetSecretFile                   // a file name holding "password="
)

// classifyTarget is openBackend's choice, shared with SQLitePath.
func classifyTarget(target string) (targetKind, string) {
	scheme, rest, ok := strings.Cut(target, "://")
	if ok && !strings.ContainsAny(scheme, `/\`) {
		switch strings.ToLower(scheme) {
		case "sqlite", "file":
			return targetSQLite, rest
		case "postgres", "postgresql":
			return targetPostgres, ""
		}
		if isKeywordDSN(target) {
			return targetPostgres, ""
		}
		return targetUnknown, ""
	}
	if isKeywordDSN(target) {
		return targetPostgres, ""
	}
	if passwordKey.MatchString(target) {
		return targetSecretFile, ""
	}
	return targetSQLite, target
}

// SQLitePath returns the file a target opens as SQLite (":memory:" for
// the in-memory store), or ok false for a PostgreSQL target and a target
// Open refuses. The CLI uses it to create the file's directory.
func SQLitePath(target string) (path string, ok bool) {
	kind, p := classifyTarget(target)
	if kind != targetSQLite {
		return "", false
	}
	// A "file:" URI's file, not the URI (the CLI once made a directory
	// named "file:" for "file:/a/b.db").
	if f := sqlite.FileName(p); f != "" {
		return f, true
	}
	if strings.TrimSpace(p) == "" {
		return p, true
	}
	return ":memory:", true
}

// keywordDSN matches the start of a libpq keyword/value connection string:
// a connection keyword, then '='. Only known keywords count, so that a
// file named "notes=old.db" stays a file (and "./dbname=x" always is one).
var keywordDSN = regexp.MustCompile(`^\s*(host|hostaddr|port|dbname|user|password|passfile|service|sslmode|sslcert|sslkey|sslpassword|sslrootcert|connect_timeout|application_name|options|target_session_attrs|channel_binding|gssencmode|krbsrvname|client_encoding)\s*=`)

// passwordKey finds "password=" (in any case, spaces allowed) in a target
// that is not a DSN: such a name is refused, never made a file.
var passwordKey = regexp.MustCompile(`(?i)password\s*=`)

func isKeywordDSN(target string) bool { return keywordDSN.MatchString(target) }

// redactURL hides passwords (and other possibly secret values) in a
// target for error messages and logs.
func redactURL(target string) string {
	return redact.Target(target)
}

var (
	_ Backend       = (*sqlite.Backend)(nil)
	_ Backend       = (*postgres.Backend)(nil)
	_ BlockNotifier = (*postgres.Backend)(nil)
)
