package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NodePackage copies files (package.json, its package-lock.json and the
// scripts) from the directory src into a temporary directory, installs the
// locked dependencies there with npm ci, and returns the node binary and
// that directory. Without node or npm, or when npm ci fails (no registry),
// it skips tb, or fails it under CI=true.
func NodePackage(tb testing.TB, src string, files ...string) (node, dir string) {
	tb.Helper()
	node, nerr := exec.LookPath("node")
	npm, perr := exec.LookPath("npm")
	if nerr != nil || perr != nil {
		Missing(tb, "node/npm not installed (%v; %v)", nerr, perr)
	}
	dir = tb.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		Missing(tb, "npm ci in a copy of %s failed (no registry?): %v\n%s", src, err, out)
	}
	return node, dir
}
