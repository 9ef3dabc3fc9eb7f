package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// ApplicationID is written to PRAGMA application_id ("engr" in ASCII).
const ApplicationID = 0x656e6772

//go:embed *.sql
var files embed.FS

// Migration is one embedded schema step.
type Migration struct {
	Version int    // 1-based position; user_version after it is applied
	Name    string // file name, e.g. "0001_core.sql"
	SQL     string
}

// All returns the embedded migrations in the order they are applied.
func All() ([]Migration, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("migrations: read embedded files: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migrations: file %q is not named NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migrations: file %q is not named NNNN_name.sql: %w", name, err)
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, fmt.Errorf("migrations: read %s: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations: %s: expected version %d (gap or duplicate)", m.Name, i+1)
		}
	}
	return out, nil
}

// Latest is the schema version this code writes.
func Latest() int {
	all, err := All()
	if err != nil {
		return 0
	}
	return len(all)
}

// Version reads the database's current schema version.
func Version(ctx context.Context, db *sql.DB) (int, error) {
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("migrations: read user_version: %w", err)
	}
	return v, nil
}

// Apply brings db up to the latest schema. It returns the version before and
// after. It is safe to call from several processes at once on one file.
func Apply(ctx context.Context, db *sql.DB) (from, to int, err error) {
	all, err := All()
	if err != nil {
		return 0, 0, err
	}
	// Pin one connection: BEGIN IMMEDIATE and the statements after it must
	// run on the same connection.
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("migrations: get connection: %w", err)
	}
	defer conn.Close()

	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&from); err != nil {
		return 0, 0, fmt.Errorf("migrations: read user_version: %w", err)
	}
	for {
		v, err := applyNext(ctx, conn, all)
		if err != nil || v >= len(all) {
			return from, v, err
		}
	}
}

// applyNext applies the next missing migration, if any, and returns the
// version afterwards.
func applyNext(ctx context.Context, conn *sql.Conn, all []Migration) (v int, err error) {
	// Cheap check without the lock first: the common case is "up to date".
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("migrations: read user_version: %w", err)
	}
	if err := checkHeader(ctx, conn, v, len(all)); err != nil {
		return v, err
	}
	if v == len(all) {
		return v, nil
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return v, fmt.Errorf("migrations: take write lock: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	// Another process may have migrated between our read and the lock.
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("migrations: re-read user_version: %w", err)
	}
	if err := checkHeader(ctx, conn, v, len(all)); err != nil {
		return v, err
	}
	if v == len(all) {
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return v, fmt.Errorf("migrations: commit: %w", err)
		}
		committed = true
		return v, nil
	}
	m := all[v]
	if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
		return v, fmt.Errorf("migrations: apply %s: %w", m.Name, err)
	}
	// PRAGMA does not take bound parameters; both values are our own ints.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
		return v, fmt.Errorf("migrations: set user_version after %s: %w", m.Name, err)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
		return v, fmt.Errorf("migrations: set application_id: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return v, fmt.Errorf("migrations: commit %s: %w", m.Name, err)
	}
	committed = true
	return m.Version, nil
}

func checkHeader(ctx context.Context, conn *sql.Conn, v, latest int) error {
	if v > latest {
		return fmt.Errorf("%w: file is at version %d, this code knows %d", ErrTooNew, v, latest)
	}
	var app int64
	if err := conn.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return fmt.Errorf("migrations: read application_id: %w", err)
	}
	if app != 0 && app != ApplicationID {
		return fmt.Errorf("%w: application_id %#x", ErrForeign, app)
	}
	return nil
}
