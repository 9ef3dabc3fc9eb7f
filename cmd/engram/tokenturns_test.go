package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A negative --token-concurrency, a --token-queue below 1, a
// --token-bytes or --token-bytes-burst that is not a size, or any other
// limit flag set to a value it cannot mean (a rate of 0, a negative
// burst) is refused, naming the flag, before the store is opened.
func TestServeTokenTurnsFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--token-concurrency", "-1"},
		{"--token-queue", "0"},
		{"--token-queue", "-3"},
		{"--token-concurrency", "many"},
		{"--token-bytes", "-1"},
		{"--token-bytes", "fast"},
		{"--token-bytes-burst", "1XiB"},
		{"--rate", "0"},
		{"--rate", "-1"},
		{"--rate", "NaN"},
		{"--burst", "0"},
		{"--max-sessions", "0"},
		{"--max-token-sessions", "-1"},
		{"--max-batch", "0"},
		{"--max-body", "-5"},
		{"--max-edit", "0"},
		{"--max-edit", "-100"},
		{"--session-idle", "0s"},
		{"--drain", "-1s"},
	} {
		db := filepath.Join(t.TempDir(), "x.db")
		_, errs, code := cli(t, db, "", append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
		if code == 0 || !strings.Contains(errs, strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
		if _, err := os.Stat(db); err == nil {
			t.Errorf("%v: the store was created", args)
		}
	}
}
