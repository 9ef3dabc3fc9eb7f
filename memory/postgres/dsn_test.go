package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/memory/postgres"
)

// A URL password holding an unescaped '/' (or an '@' and then a '/') is cut
// by libpq's parser (which pgx follows) into host, port and database name,
// and pgx's connect error quotes those: "postgres://localhost:1/s3cret@h/db"
// failed with "failed to connect to `user=... database=s3cret@h/db`" (and
// looked up a piece of the password in DNS). Such a URL is refused before
// anything connects, and the refusal shows no piece of the password.
func TestOpenRefusesURLWithPasswordPiecesOutsideUserinfo(t *testing.T) {
	for _, dsn := range []string{
		"postgres://127.0.0.1:1/s3cret@127.0.0.1:1/db?connect_timeout=2",     // password "1/s3cret", user "127.0.0.1"
		"postgres://u:a@127.0.0.1:1/s3cret@127.0.0.1:1/db?connect_timeout=2", // password "a@127.0.0.1:1/s3cret"
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := postgres.Open(ctx, dsn, nil)
		cancel()
		if b != nil {
			b.Close()
		}
		if !errors.Is(err, postgres.ErrInvalidDSN) {
			t.Errorf("Open(%q) = %v, want ErrInvalidDSN", dsn, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q): %v shows the password", dsn, err)
		}
	}
}

// URL schemes are case-insensitive, and the store takes "POSTGRES://" for
// PostgreSQL; pgx accepts only lower case, so Open refused it as an invalid
// connection string (with advice about percent-encoding).
func TestOpenAcceptsUpperCaseScheme(t *testing.T) {
	for _, dsn := range []string{"POSTGRES://u:pw@127.0.0.1:1/db?connect_timeout=2", "PostgreSQL://127.0.0.1:1/db?connect_timeout=2"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := postgres.Open(ctx, dsn, nil)
		cancel()
		if b != nil {
			b.Close()
		}
		if err == nil || errors.Is(err, postgres.ErrInvalidDSN) || !strings.Contains(err.Error(), "connect") {
			t.Errorf("Open(%q) = %v, want a connect error (nothing listens on port 1)", dsn, err)
		}
	}
}

// A keyword DSN pgx cannot parse (an unquoted password with a space) was
// refused with advice for URLs (percent-encoding); the advice now fits the
// form: quote the value.
func TestInvalidKeywordDSNAdvisesQuoting(t *testing.T) {
	_, err := postgres.Open(context.Background(), "host=127.0.0.1 port=1 password=my s3cret dbname=d", nil)
	if !errors.Is(err, postgres.ErrInvalidDSN) || !strings.Contains(err.Error(), "single-quote") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open = %v, want ErrInvalidDSN advising quotes, without the password", err)
	}
}

// libpq expands a dbname that is itself a connection string
// ("dbname=postgres://u:pw@h/db"); pgx takes it as a database name, and its
// connect error (and the server's) quoted it, password and all. Such a
// dbname is refused before connecting, without the password.
func TestOpenRefusesConnectionStringAsDBName(t *testing.T) {
	for _, dsn := range []string{
		"host=127.0.0.1 port=1 dbname=postgres://u:s3cret@127.0.0.1:1/db connect_timeout=2",
		"host=127.0.0.1 port=1 dbname='host=x password=s3cret' connect_timeout=2",
		"postgres://127.0.0.1:1/x?dbname=postgres://u:s3cret@127.0.0.1:1/db&connect_timeout=2",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := postgres.Open(ctx, dsn, nil)
		cancel()
		if b != nil {
			b.Close()
		}
		if !errors.Is(err, postgres.ErrInvalidDSN) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q) = %v, want ErrInvalidDSN without the password", dsn, err)
		}
	}
}

// A query may hold both '/' and '@' for good reasons: such URLs are not
// refused by the check above.
func TestOpenAcceptsSlashAndAtInQuery(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u@127.0.0.1:1?host=/tmp&user=ada@srv&connect_timeout=2",
		"postgres://127.0.0.1:1/db?application_name=/a@b&connect_timeout=2",
	} {
		_, err := postgres.Open(context.Background(), dsn, nil)
		if err == nil || errors.Is(err, postgres.ErrInvalidDSN) {
			t.Errorf("Open(%q) = %v, want a connect error", dsn, err)
		}
	}
}
