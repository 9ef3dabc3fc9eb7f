package main

// The CLI serves PostgreSQL stores too (--db postgres://…): the import
// registers the backend with package memory.
import _ "github.com/engram-go/engram/memory/postgres"
