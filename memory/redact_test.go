package memory_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

// A store target that could hold a password never reaches
// an error whole, and a keyword DSN is PostgreSQL, never a SQLite file
// named after it.
func TestOpenHidesTargetSecrets(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct {
		name, target string
		want         error // nil: any error (no server here)
	}{
		{"URL with a bad escape", "postgres://user:SECRET%PW@127.0.0.1:1/db", nil},
		{"URL with an unescaped slash", "postgres://user:SEC/RET@127.0.0.1:1/db", nil},
		{"keyword DSN", "host=127.0.0.1 port=1 dbname=x user=u password=SECRET connect_timeout=1", nil},
		{"keyword DSN, quoted", "dbname=x host=127.0.0.1 port=1 password='SEC RET' connect_timeout=1", nil},
		{"unknown scheme", "mysql://u:SECRET@h/db", memory.ErrUnknownScheme},
		{"file name holding a password", "./store password=SECRET", memory.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := memory.Open(context.Background(), fresh(tc.target), &memory.Options{BusyTimeout: time.Second})
			if err == nil {
				c.Close()
				t.Fatalf("Open(%q) succeeded", tc.target)
			}
			msg := err.Error()
			if strings.Contains(msg, "SECRET") || strings.Contains(msg, "SEC RET") || strings.Contains(msg, "RET") || !strings.Contains(msg, "xxxxx") {
				t.Errorf("Open(%q): err = %v", tc.target, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Open(%q): err = %v, want %v", tc.target, err, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Open of connection strings created %v", entries)
	}
}

// SQLitePath is the CLI's test for "make the file's directory".
func TestSQLitePath(t *testing.T) {
	for _, tc := range []struct {
		target, path string
		ok           bool
	}{
		{"/tmp/x.db", "/tmp/x.db", true},
		{":memory:", ":memory:", true},
		{"sqlite:///tmp/x.db", "/tmp/x.db", true},
		{"notes=old.db", "notes=old.db", true},
		{"postgres://h/db", "", false},
		{"host=h dbname=x", "", false},
		{" dbname = x", "", false},
		{"host=h password=a://b", "", false},
		{"x password=y", "", false},
		{"mysql://h", "", false},
		// A SQLite "file:" URI names its file after "file:"; the CLI
		// made a directory named "file:" for it.
		{"file:/tmp/x.db", "/tmp/x.db", true},
		{"file:/tmp/a%20b.db?mode=rwc", "/tmp/a b.db", true},
		{"file:x.db", "x.db", true},
		{"file::memory:?cache=shared", ":memory:", true},
		{"file:/tmp/m.db?mode=memory", ":memory:", true},
	} {
		if p, ok := memory.SQLitePath(tc.target); p != tc.path || ok != tc.ok {
			t.Errorf("SQLitePath(%q) = %q, %v; want %q, %v", tc.target, p, ok, tc.path, tc.ok)
		}
	}
}

// A keyword DSN opens PostgreSQL (pgx parses it), the same database as the
// URL it was written from.
func TestOpenKeywordDSN(t *testing.T) {
	t.Chdir(t.TempDir()) // the original code made a SQLite file here
	srv := pgtest.Start(t)
	u, err := url.Parse(srv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	kw := "dbname=" + strings.TrimPrefix(u.Path, "/") + " user=" + u.User.Username()
	if h := u.Query().Get("host"); h != "" {
		kw += " host=" + h
	} else {
		kw += " host=" + u.Hostname()
		if p := u.Port(); p != "" {
			kw += " port=" + p
		}
	}
	if pw, ok := u.User.Password(); ok {
		kw += " password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "'"
	}
	ctx := context.Background()
	byURL, err := memory.Open(ctx, fresh(u.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer byURL.Close()
	if _, err := byURL.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "via URL"}); err != nil {
		t.Fatal(err)
	}
	byKW, err := memory.Open(ctx, fresh(kw), nil)
	if err != nil {
		t.Fatalf("Open(keyword DSN): %v", err)
	}
	defer byKW.Close()
	if storeaccess.Backend(byKW).Name() != "postgres" {
		t.Fatalf("keyword DSN opened %s", storeaccess.Backend(byKW).Name())
	}
	if r, err := byKW.Agent("ada").Block("notes").Render(ctx); err != nil || !strings.Contains(r, "via URL") {
		t.Fatalf("notes through the keyword DSN: %q, %v", r, err)
	}
}

// A file name that reads as a keyword DSN ("host=x.db") opens PostgreSQL;
// the failure said nothing of the file the user may have meant. It now
// says how to name such a file.
func TestKeywordLikeFileNameHint(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := memory.Open(ctx, fresh("port=1"), nil)
	if err == nil {
		s.Close()
		t.Fatal("port=1 opened")
	}
	if !strings.Contains(err.Error(), "./port=1") {
		t.Fatalf("Open(port=1) = %v, want a hint naming ./port=1", err)
	}
}
