package memory_test

// The PostgreSQL scenarios of this package's tests (internal ones
// included: they share the test binary) open their stores by URL.
import _ "github.com/engram-go/engram/memory/postgres"
