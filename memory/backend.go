package memory

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/redact"
	"github.com/engram-go/engram/memory/sqlite"
)

// openBackend picks the backend from Open's target: a file path,
// ":memory:" or sqlite://PATH → SQLite, built in; a URL with another
// scheme, or a libpq keyword/value string ("host=… dbname=…") → the backend
// registered for it (see Register), memory/postgres for postgres://,
// postgresql:// and keyword strings. A scheme nobody registered is refused
// rather than taken for a relative path (which once made "postgres://…" a
// directory named "postgres:"), and so is a would-be file name holding
// "password=" (a keyword DSN once became a SQLite file whose name held the
// password). The name returned is redacted.
func openBackend(ctx context.Context, target string, o Options) (driver.Backend, string, error) {
	return backends.open(ctx, target, o)
}

func (r *registry) open(ctx context.Context, target string, o Options) (driver.Backend, string, error) {
	kind, path, scheme := classifyTarget(target)
	switch kind {
	case targetSQLite:
		if strings.TrimSpace(path) == "" {
			return nil, "", invalidArg("store path is empty")
		}
		b, err := sqlite.Open(ctx, path, &sqlite.Options{BusyTimeout: o.BusyTimeout})
		return b, redactURL(path), err
	case targetURL, targetKeyword:
		d, ok := r.lookup(scheme)
		if !ok {
			return nil, "", unregistered(target, scheme)
		}
		b, err := d.d.Open(ctx, target, &driver.OpenOptions{LockTimeout: o.BusyTimeout, Logger: o.Logger})
		if err != nil && kind == targetKeyword && !strings.ContainsAny(target, ":/ \t\n\r") && !passwordKey.MatchString(target) {
			// One word, "host=x.db": it may have been meant as a file name
			// (no password in it, so it may be shown).
			err = fmt.Errorf("%w\n(read as a PostgreSQL keyword DSN; for a SQLite file of that name use ./%s or sqlite://%s)", err, target, target)
		}
		if err == nil && b == nil {
			err = fmt.Errorf("backend %s opened no backend", d.name)
		}
		return b, redactURL(target), err
	case targetSecretFile:
		return nil, "", invalidArg("store %q looks like a connection string, not a file name (a PostgreSQL keyword DSN starts with host=, dbname=, user=, ...; a SQLite file name may not hold \"password=\")", redactURL(target))
	}
	return nil, "", fmt.Errorf("%w: %q", ErrUnknownScheme, redactURL(target))
}

// unregistered is Open's error for a target no registered backend claims:
// like database/sql's, it asks whether an import was forgotten, and names
// the package when engram ships the backend.
func unregistered(target, scheme string) error {
	what := fmt.Sprintf("scheme %q", scheme)
	if scheme == "" {
		what = "keyword DSNs"
	}
	hint := "import the package of a backend that registers it"
	if pkg := importFor(scheme); pkg != "" {
		hint = fmt.Sprintf(`import _ %q`, pkg)
	}
	return fmt.Errorf("%w: %q: no backend registered for %s (forgotten import? %s; built in: a file path, \":memory:\" or sqlite://PATH)",
		ErrUnknownScheme, redactURL(target), what, hint)
}

type targetKind int

const (
	targetUnknown    targetKind = iota // not a target at all
	targetSQLite                       // path is the file (or ":memory:")
	targetURL                          // a URL whose scheme a registered backend may serve
	targetKeyword                      // a libpq keyword/value string
	targetSecretFile                   // a file name holding "password="
)

// classifyTarget is openBackend's choice, shared with SQLitePath: the
// kind, the SQLite path, and for a URL its scheme in lower case.
func classifyTarget(target string) (kind targetKind, path, scheme string) {
	scheme, rest, ok := strings.Cut(target, "://")
	if ok && !strings.ContainsAny(scheme, `/\`) {
		switch scheme = strings.ToLower(scheme); scheme {
		case "sqlite", "file":
			return targetSQLite, rest, ""
		}
		if isKeywordDSN(target) {
			// A keyword string whose value holds "://" ("host=h
			// password=a://b").
			return targetKeyword, "", ""
		}
		return targetURL, "", scheme
	}
	if isKeywordDSN(target) {
		return targetKeyword, "", ""
	}
	if passwordKey.MatchString(target) {
		return targetSecretFile, "", ""
	}
	return targetSQLite, target, ""
}

// SQLitePath returns the file a target opens as SQLite (":memory:" for
// the in-memory store), or ok false for a PostgreSQL target and a target
// Open refuses. The CLI uses it to create the file's directory.
func SQLitePath(target string) (path string, ok bool) {
	kind, p, _ := classifyTarget(target)
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

var _ driver.Backend = (*sqlite.Backend)(nil)
