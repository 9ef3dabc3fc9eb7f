package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/sqlitedriver"
	pgbackend "github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

func TestNewIndexNeedsADialect(t *testing.T) {
	if _, err := searchindex.NewIndex(context.Background(), openDB(t), nil, nil, nil); err == nil {
		t.Fatal("NewIndex without a dialect: no error")
	}
}

// A database without the search schema is refused with ErrSchema.
func TestNewIndexWithoutSchema(t *testing.T) {
	db, err := sql.Open(sqlitedriver.Name, "file:"+filepath.Join(t.TempDir(), "bare.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, nil, nil)
	if !errors.Is(err, search.ErrSchema) {
		t.Fatalf("NewIndex on a database without migrations: %v, want ErrSchema", err)
	}
}

// Package search holds no engine's SQL: no schema statement and no
// engine-specific function or syntax in any string of its non-test code.
// Those belong to a driver.Dialect (memory/sqlite, memory/postgres).
func TestNoEngineSQLInSearch(t *testing.T) {
	forbidden := []string{
		"create table", "create index", "create virtual", "create trigger", "create extension",
		"alter table", "drop table", "drop index", "drop trigger", "analyze ",
		"sqlite_master", "pg_class", "pg_extension", "pg_attribute", "begin immediate", "pg_advisory",
		"vec_distance_cosine", "json_each", "json_extract", "json_tree", "json_object", "json_build_object",
		"json_array_elements", "to_tsquery", "ts_rank", "bm25(", " match ", "::", "cross join", "without rowid",
	}
	eachSourceFile(t, func(fset *token.FileSet, f *ast.File) {
		tags := map[*ast.BasicLit]bool{} // struct tags are not SQL
		ast.Inspect(f, func(n ast.Node) bool {
			if fd, ok := n.(*ast.Field); ok && fd.Tag != nil {
				tags[fd.Tag] = true
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || tags[lit] {
				return true
			}
			s := strings.ToLower(lit.Value)
			for _, frag := range forbidden {
				if strings.Contains(s, frag) {
					t.Errorf("%s: %q in a string: a driver.Dialect's SQL", fset.Position(lit.Pos()), frag)
				}
			}
			return true
		})
	})
}

// eachSourceFile parses each non-test Go file of the package and hands
// it to fn (failing when there is none).
func eachSourceFile(t *testing.T, fn func(fset *token.FileSet, f *ast.File)) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		fn(fset, f)
	}
	if checked == 0 {
		t.Fatal("no source files found")
	}
}

// TestNoEngineBranchInSearch: no non-test code of the package compares a
// name (a dialect's Name()) with a string naming one: what differs by
// engine is asked of the dialect (an optional interface such as
// PerRunPlanner or TextPartLocker), so a new engine's dialect says it,
// not this package.
func TestNoEngineBranchInSearch(t *testing.T) {
	eachSourceFile(t, func(fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			be, ok := n.(*ast.BinaryExpr)
			if !ok || (be.Op != token.EQL && be.Op != token.NEQ) {
				return true
			}
			named := func(e ast.Expr) bool {
				call, ok := e.(*ast.CallExpr)
				if !ok || len(call.Args) != 0 {
					return false
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				return ok && sel.Sel.Name == "Name"
			}
			literal := func(e ast.Expr) bool {
				lit, ok := e.(*ast.BasicLit)
				return ok && lit.Kind == token.STRING && lit.Value != `""`
			}
			if (named(be.X) && literal(be.Y)) || (named(be.Y) && literal(be.X)) {
				t.Errorf("%s: a Name() compared with a name: ask the dialect instead", fset.Position(be.Pos()))
			}
			return true
		})
	})
}

// TestDialectsPlanEachRun: SQLite's dialect says it plans a prepared
// statement at each run (statements naming a log position are prepared
// once); PostgreSQL's, whose generic plans could read the whole log,
// does not.
func TestDialectsPlanEachRun(t *testing.T) {
	pr, ok := any(sqlite.SearchDialect{}).(searchindex.PerRunPlanner)
	if !ok || !pr.PlansEachRun() {
		t.Fatal("sqlite.SearchDialect does not say it plans each run")
	}
	if _, ok := any(pgbackend.SearchDialect{}).(searchindex.PerRunPlanner); ok {
		t.Fatal("postgres.SearchDialect says it plans each run")
	}
}
