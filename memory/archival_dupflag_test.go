package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// An entry handed in with Duplicate set (an entry an earlier insert
// returned, passed again) is not a duplicate: it is stored, and so are
// its tags and its place in the batch's deferred index.
func TestArchivalDuplicateFlagFromCaller(t *testing.T) {
	ctx := context.Background()
	s, err := memory.Open(ctx, filepath.Join(t.TempDir(), "d.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ar := s.Agent("a").Archival()
	_, err = ar.InsertBatch(ctx, []memory.ArchivalEntry{
		{Content: "one", Tags: []string{"x"}, Duplicate: true},
		{Content: "two", Tags: []string{"x"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ar.List(ctx, &memory.ArchivalQuery{Tags: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("listed by tag x: %d entries, want 2", len(got))
	}
}

// A batch whose every entry merges into a stored one inserts nothing and
// leaves the index as it was; the next insert is indexed as ever (the
// batch's deferral of the index ended with it).
func TestArchivalBatchAllDuplicates(t *testing.T) {
	ctx := context.Background()
	targets := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "all.db") },
		"postgres": func(t *testing.T) string { return pgtest.Start(t).NewDatabase(t) },
	}
	for engine, target := range targets {
		t.Run(engine, func(t *testing.T) {
			target := target(t)
			s, err := memory.Open(ctx, target, &memory.Options{TextCacheBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ar := s.Agent("a").Archival()
			meta := map[string]any{"session": 2}
			if _, err := ar.InsertBatch(ctx, []memory.ArchivalEntry{{Content: "kestrel over the dunes", Metadata: meta}, {Content: "plover on the sand", Metadata: meta}}, nil); err != nil {
				t.Fatal(err)
			}
			es, err := ar.InsertBatch(ctx, []memory.ArchivalEntry{{Content: "kestrel over the dunes", Metadata: meta}, {Content: "plover on the sand", Metadata: meta}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				if !e.Duplicate {
					t.Errorf("%q was inserted again, want merged", e.Content)
				}
			}
			if _, err := ar.Insert(ctx, memory.ArchivalEntry{Content: "curlew at dusk"}); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"curlew", "kestrel", "plover"} {
				rs, err := s.Agent("a").Search(ctx, q, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival))
				if err != nil {
					t.Fatal(err)
				}
				if len(rs) == 0 {
					t.Errorf("%q finds nothing", q)
				}
			}
		})
	}
}
