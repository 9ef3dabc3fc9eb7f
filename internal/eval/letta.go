package eval

import (
	"os"
	"path/filepath"
	"sort"
)

// FindLettaAF returns the directory of the Letta agent files (.af) the
// interop tests import: $ENGRAM_LETTA_AF if set, else
// shared/datasets/letta-af beside (or inside) the working directory or any
// of its parents; "" if absent.
func FindLettaAF() string {
	if p := os.Getenv("ENGRAM_LETTA_AF"); p != "" {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		return ""
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		for _, p := range []string{
			filepath.Join(dir, "..", "shared", "datasets", "letta-af"),
			filepath.Join(dir, "shared", "datasets", "letta-af"),
		} {
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				return filepath.Clean(p)
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// LettaAgentFiles lists the .af files of dir, sorted.
func LettaAgentFiles(dir string) ([]string, error) {
	out, err := filepath.Glob(filepath.Join(dir, "*.af"))
	sort.Strings(out)
	return out, err
}
