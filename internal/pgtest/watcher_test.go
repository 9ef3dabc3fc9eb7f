package pgtest_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
)

// envChild makes the test binary the process that starts a cluster and
// dies without stopping it.
const envChild = "PGTEST_WATCHER_CHILD"

// A test binary that dies before its cleanups run (a panic under Main,
// a timeout, a kill) leaves no cluster behind: the server stops and its
// directory goes once the process is gone.
func TestClusterStopsWhenItsProcessDies(t *testing.T) {
	if os.Getenv(envChild) == "1" {
		u, _, err := pgtest.Launch(false)
		if err != nil {
			os.Stdout.WriteString("NO CLUSTER " + err.Error() + "\n")
			os.Exit(0)
		}
		os.Stdout.WriteString("CLUSTER " + u.Query().Get("host") + "\n")
		os.Exit(3) // no stop: as a panic ends a test binary
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterStopsWhenItsProcessDies$")
	cmd.Env = append(os.Environ(), envChild+"=1")
	out, _ := cmd.Output()
	var dir string
	for sc := bufio.NewScanner(strings.NewReader(string(out))); sc.Scan(); {
		if d, ok := strings.CutPrefix(sc.Text(), "CLUSTER "); ok {
			dir = d
		} else if msg, ok := strings.CutPrefix(sc.Text(), "NO CLUSTER "); ok {
			if os.Getenv("CI") == "true" {
				t.Fatalf("no PostgreSQL (CI requires it): %s", msg)
			}
			t.Skipf("no PostgreSQL: %s", msg)
		}
	}
	if dir == "" || !strings.HasPrefix(filepath.Base(dir), "engram-pg-") {
		t.Fatalf("child printed no cluster directory: %q", out)
	}
	t.Cleanup(func() { // a left cluster is stopped here at least
		if _, err := os.Stat(dir); err == nil {
			stop := exec.Command("pg_ctl", "-D", filepath.Join(dir, "data"), "-m", "immediate", "-w", "stop")
			if matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl"); len(matches) > 0 {
				stop.Path = matches[len(matches)-1]
			}
			if os.Geteuid() == 0 {
				stop = exec.Command("runuser", append([]string{"-u", "nobody", "--", stop.Path}, stop.Args[1:]...)...)
			}
			stop.Run()
			os.RemoveAll(dir)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := os.Stat(dir)
		if os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s still there 20 s after its process died", dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
