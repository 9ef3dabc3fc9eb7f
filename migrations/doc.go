// Package migrations is the one home of engram's SQL schema: each engine's
// numbered NNNN_name.sql files, embedded. migrations/sqlite holds what
// memory/sqlite applies, migrations/postgres what memory/postgres applies;
// each backend applies its own set in order, each file at most once, and
// refuses a database at a newer version than its set.
//
// The two sets are numbered separately because each engine records its
// version its own way (SQLite in PRAGMA user_version, PostgreSQL in table
// engram_schema): a file's number is a database's version after it, so a
// released file is never renamed, renumbered or edited (TestReleasedFiles
// holds them to their checksums). A schema change is a new file in each
// set whose engine it concerns.
package migrations
