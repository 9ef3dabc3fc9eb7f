// Package migrations holds engram's SQL schema as embedded, numbered *.sql
// files and applies them to a SQLite database.
//
// Each file NNNN_name.sql is applied at most once, in order, inside its own
// transaction; the database's PRAGMA user_version records how many files have
// been applied and PRAGMA application_id marks the file as an engram store.
// Apply takes SQLite's write lock (BEGIN IMMEDIATE) before it re-reads the
// version, so two processes opening one new file at the same moment cannot both
// apply a migration. A database whose version is newer than this code knows is
// refused with ErrTooNew rather than used half-understood.
package migrations
