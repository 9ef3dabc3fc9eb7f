package memory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/engram-go/engram/driver"
)

func TestRegistry(t *testing.T) {
	open := func(context.Context, string, *driver.OpenOptions) (driver.Backend, error) {
		return nil, errors.New("no server here")
	}
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", what)
			}
		}()
		f()
	}
	var r registry
	r.register("pg", driver.Driver{Schemes: []string{"Postgres", "postgresql"}, KeywordDSN: true, Open: open})
	mustPanic("scheme registered twice", func() { r.register("other", driver.Driver{Schemes: []string{"POSTGRES"}, Open: open}) })
	mustPanic("keyword DSNs claimed twice", func() { r.register("other", driver.Driver{KeywordDSN: true, Open: open}) })
	mustPanic("a built-in scheme", func() { r.register("lite", driver.Driver{Schemes: []string{"sqlite"}, Open: open}) })
	mustPanic("no Open", func() { r.register("x", driver.Driver{Schemes: []string{"x"}}) })
	mustPanic("no name", func() { r.register("", driver.Driver{Schemes: []string{"y"}, Open: open}) })
	if got := r.names(); len(got) != 1 || got[0] != "pg" {
		t.Errorf("names() = %v", got)
	}
	// A refused registration left nothing behind.
	if _, ok := r.lookup("x"); ok {
		t.Error(`scheme "x" registered by a refused call`)
	}

	ctx := context.Background()
	for _, tc := range []struct {
		target string
		want   string // in the error; "" means the driver's
		is     error
	}{
		{"POSTGRES://u:s3cret@h/db", "no server here", nil},
		{"host=h dbname=d password=s3cret", "no server here", nil},
		{"host=x.db", "for a SQLite file of that name use ./host=x.db", nil},
		{"mysql://u:s3cret@h/db", `no backend registered for scheme "mysql" (forgotten import? import the package`, ErrUnknownScheme},
		{"x password=s3cret", "looks like a connection string", ErrInvalidArgument},
	} {
		_, _, err := r.open(ctx, tc.target, (*Options)(nil).withDefaults())
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("open(%q) = %v, want %q", tc.target, err, tc.want)
		}
	}
	var empty registry
	if _, _, err := empty.open(ctx, "postgresql://h/db", (*Options)(nil).withDefaults()); !errors.Is(err, ErrUnknownScheme) ||
		!strings.Contains(err.Error(), `import _ "github.com/engram-go/engram/memory/postgres"`) {
		t.Errorf("open without the driver: %v", err)
	}
}
