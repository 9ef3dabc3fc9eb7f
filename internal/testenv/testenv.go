// Package testenv decides what a test does when something it needs from
// the machine is missing (a data set, a tool): it skips on a developer's
// machine and fails under CI=true, where a skipped check would pass without
// checking. The PostgreSQL, Chromium and node tests follow the same rule.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// CI reports whether the tests run in CI (CI=true), which provides
// everything the suite needs.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing skips tb, explaining what is missing, or fails it under CI=true.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		tb.Fatalf("%s: CI=true requires it (a skip would pass without checking)", msg)
	}
	tb.Skip(msg)
}
