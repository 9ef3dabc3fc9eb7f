package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// Migration is one embedded schema step.
type Migration struct {
	Version int    // 1-based position: the database's version after it
	Name    string // file name, e.g. "0001_core.sql"
	SQL     string
}

// SQLite returns the migrations memory/sqlite applies, in order.
func SQLite() ([]Migration, error) { return load("sqlite") }

// Postgres returns the migrations memory/postgres applies, in order.
func Postgres() ([]Migration, error) { return load("postgres") }

// PostgresVersionTable creates the table in which memory/postgres records
// how many of Postgres' migrations a database has applied (one row, one
// column, version). It is not a migration: it says which migrations ran.
const PostgresVersionTable = `CREATE TABLE IF NOT EXISTS engram_schema (version BIGINT NOT NULL)`

func load(dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: read embedded %s files: %w", dir, err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migrations: %s/%s is not named NNNN_name.sql", dir, name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migrations: %s/%s is not named NNNN_name.sql: %w", dir, name, err)
		}
		body, err := fs.ReadFile(files, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("migrations: read %s/%s: %w", dir, name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations: %s/%s: expected version %d (gap or duplicate)", dir, m.Name, i+1)
		}
	}
	return out, nil
}
