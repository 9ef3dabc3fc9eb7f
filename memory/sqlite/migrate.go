package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/engram-go/engram/migrations"
)

// ApplicationID is written to PRAGMA application_id ("engr" in ASCII).
const ApplicationID = 0x656e6772

// Migrate brings db, a SQLite database, to the latest schema of
// migrations.SQLite, and returns its version before and after. PRAGMA
// user_version records how many files have been applied and PRAGMA
// application_id marks the file as an engram store. Each file is applied
// in its own transaction, which takes SQLite's write lock (BEGIN
// IMMEDIATE) before re-reading the version, so several processes may
// migrate one new file at once. A database at a newer version than this
// build knows is refused with ErrTooNew, another application's file with
// ErrForeign. Open calls it; tools that open a file themselves may too.
func Migrate(ctx context.Context, db *sql.DB) (from, to int, err error) {
	all, err := migrations.SQLite()
	if err != nil {
		return 0, 0, err
	}
	// Pin one connection: BEGIN IMMEDIATE and the statements after it must
	// run on the same connection.
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: migrate: get connection: %w", err)
	}
	defer conn.Close()

	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&from); err != nil {
		return 0, 0, fmt.Errorf("sqlite: migrate: read user_version: %w", err)
	}
	for {
		v, err := applyNext(ctx, conn, all)
		if err != nil || v >= len(all) {
			return from, v, err
		}
	}
}

// MigratedVersion reads db's schema version: how many of migrations.SQLite
// it has applied.
func MigratedVersion(ctx context.Context, db *sql.DB) (int, error) {
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlite: read user_version: %w", err)
	}
	return v, nil
}

// SchemaVersion returns the database's migration version and the latest
// this build knows.
func (b *Backend) SchemaVersion(ctx context.Context) (have, latest int, err error) {
	all, err := migrations.SQLite()
	if err != nil {
		return 0, 0, err
	}
	have, err = MigratedVersion(ctx, b.rdb)
	return have, len(all), err
}

// applyNext applies the next missing migration, if any, and returns the
// version afterwards.
func applyNext(ctx context.Context, conn *sql.Conn, all []migrations.Migration) (v int, err error) {
	// Cheap check without the lock first: the common case is "up to date".
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlite: migrate: read user_version: %w", err)
	}
	if err := checkHeader(ctx, conn, v, len(all)); err != nil {
		return v, err
	}
	if v == len(all) {
		return v, nil
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return v, fmt.Errorf("sqlite: migrate: take write lock: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	// Another process may have migrated between our read and the lock.
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlite: migrate: re-read user_version: %w", err)
	}
	if err := checkHeader(ctx, conn, v, len(all)); err != nil {
		return v, err
	}
	if v == 0 {
		if err := checkEmpty(ctx, conn); err != nil {
			return v, err
		}
	}
	if v == len(all) {
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return v, fmt.Errorf("sqlite: migrate: commit: %w", err)
		}
		committed = true
		return v, nil
	}
	m := all[v]
	if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
		return v, fmt.Errorf("sqlite: migrate: apply %s: %w", m.Name, err)
	}
	// PRAGMA does not take bound parameters; both values are our own ints.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
		return v, fmt.Errorf("sqlite: migrate: set user_version after %s: %w", m.Name, err)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
		return v, fmt.Errorf("sqlite: migrate: set application_id: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return v, fmt.Errorf("sqlite: migrate: commit %s: %w", m.Name, err)
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
		return fmt.Errorf("sqlite: migrate: read application_id: %w", err)
	}
	if app != 0 && app != ApplicationID {
		return fmt.Errorf("%w: application_id %#x", ErrForeign, app)
	}
	if app == 0 && v > 0 {
		// engram sets application_id with every migration it applies
		// (and always has): a version without it is another
		// application's own use of user_version.
		return fmt.Errorf("%w: user_version %d without engram's application_id", ErrForeign, v)
	}
	return nil
}

// checkEmpty refuses a file at version 0 that already holds tables (or
// views, indexes, triggers) of its own: another application's database,
// most of which leave application_id at 0, which engram's first migration
// would otherwise extend and claim. It runs under the write lock, where no
// other opener can be halfway through migration 0001.
func checkEmpty(ctx context.Context, conn *sql.Conn) error {
	var name string
	err := conn.QueryRowContext(ctx, `SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\' LIMIT 1`).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: migrate: read schema: %w", err)
	}
	return fmt.Errorf("%w: a file with no engram version already holds %q", ErrForeign, name)
}
