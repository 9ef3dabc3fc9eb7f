package pgtest_test

import (
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A test's databases (and the role of NewRoleDatabase) go when the test
// ends, so a test binary sharing one cluster does not keep every test's
// files; one still in use stays, and its test does not fail for it.
func TestDatabasesGoWithTheirTest(t *testing.T) {
	srv := pgtest.Start(t)
	var plain, owned, inUse string
	var held *sql.DB
	t.Run("test", func(t *testing.T) {
		plain = srv.NewDatabase(t)
		owned = srv.NewRoleDatabase(t)
		inUse = srv.NewDatabase(t)
		for _, dsn := range []string{plain, owned} {
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Ping(); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}
		var err error
		if held, err = sql.Open("pgx", inUse); err != nil {
			t.Fatal(err)
		}
		if err := held.Ping(); err != nil {
			t.Fatal(err)
		}
	})
	defer held.Close()
	admin := maintenance(t, srv, plain)
	defer admin.Close()
	exists := func(q, name string) bool {
		var n int
		if err := admin.QueryRow(q, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	const dbq = "SELECT count(*) FROM pg_database WHERE datname = $1"
	for _, dsn := range []string{plain, owned} {
		if name := dbName(t, dsn); exists(dbq, name) {
			t.Errorf("database %s still there after its test ended", name)
		}
	}
	u, _ := url.Parse(owned)
	if role := u.User.Username(); exists("SELECT count(*) FROM pg_roles WHERE rolname = $1", role) {
		t.Errorf("role %s still there after its test ended", role)
	}
	if name := dbName(t, inUse); !exists(dbq, name) {
		t.Errorf("database %s dropped while a connection still used it", name)
	}
}

func dbName(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// maintenance connects to the server's maintenance database as its
// administrative user.
func maintenance(t *testing.T, srv *pgtest.Server, dsn string) *sql.DB {
	t.Helper()
	u, err := url.Parse(srv.SuperuserURL(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/postgres"
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	return db
}
