// Package pgtest gives tests a real PostgreSQL: the server named by
// ENGRAM_TEST_POSTGRES (a postgres:// URL whose user may create
// databases), or a throwaway cluster it starts itself with initdb and
// pg_ctl from the PostgreSQL installation (unix socket in a temp dir,
// stopped when the test ends). Under euid 0 the cluster runs as user
// "nobody", since initdb refuses root.
//
// A package whose TestMain runs its tests through [Main] shares one
// throwaway cluster among them (each test still gets its own databases
// and roles): starting a cluster costs ~3 s, more than most tests.
// Without Main, each test starts its own. A cluster also stops, and its
// directory goes, when the process that started it dies before stopping
// it (a panicking test under Main, a test timeout, a kill).
//
// When no server can be had, tests skip, except under CI=true, where a
// missing server is a failure: CI must not pass by skipping the backend.
//
// (*Server).Pooler puts PgBouncer in transaction mode in front of a
// server, for the tests that run engram through a connection pooler;
// LaunchPooler does for the bench program.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// EnvDSN names the variable holding an existing server's URL.
const EnvDSN = "ENGRAM_TEST_POSTGRES"

// Server is one PostgreSQL server available to a test.
type Server struct {
	base *url.URL // connection URL of the maintenance database
	// pooled, when not nil, is base through a connection pooler
	// (Pooler): the URLs NewDatabase returns go through it, while the
	// databases are created and dropped directly.
	pooled *url.URL
}

var dbSeq atomic.Int64

// runID tells this process's databases and roles from those a process of
// the same id left on a long-lived server (a database still in use when
// its test ended stays there): the process id alone repeats.
var runID = fmt.Sprintf("%d_%x", os.Getpid(), time.Now().UnixNano()&0xffffff)

// shared is the cluster of a test binary run through Main: started by
// the first Start, stopped when Main's tests end.
var shared struct {
	mu     sync.Mutex
	inMain bool
	tried  bool
	u      *url.URL
	stop   func()
	err    error
}

// Main runs m's tests, the PostgreSQL tests among them on one cluster
// (started when the first asks for it), stops that cluster and returns
// m.Run's code: call it from TestMain as os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.inMain = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.stop != nil {
		shared.stop()
		shared.stop = nil
	}
	return code
}

// Start returns a server for t: ENGRAM_TEST_POSTGRES; under Main, the
// test binary's cluster; else a cluster started for this test and
// stopped in its cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("pgtest: %s: %v", EnvDSN, err)
		}
		return &Server{base: u}
	}
	var u *url.URL
	var err error
	shared.mu.Lock()
	if shared.inMain {
		if !shared.tried {
			shared.tried = true
			shared.u, shared.stop, shared.err = Launch(false)
		}
		u, err = shared.u, shared.err
		shared.mu.Unlock()
	} else {
		shared.mu.Unlock()
		var stop func()
		if u, stop, err = Launch(false); err == nil {
			t.Cleanup(stop)
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pgtest: cannot start PostgreSQL (CI requires it): %v", err)
		}
		t.Skipf("pgtest: no PostgreSQL (set %s or install PostgreSQL 15): %v", EnvDSN, err)
	}
	return &Server{base: u}
}

// NewDatabase creates an empty database and returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("engram_%s_%d", runID, dbSeq.Add(1))
	dsn, err := DatabaseURL(s.base, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { s.drop(name, "") })
	if s.pooled != nil {
		if dsn, err = PooledURL(s.pooled, dsn); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	return dsn
}

// drop removes a test's database (and role, if not "") when nothing is
// connected to it any more, so that a binary running hundreds of tests on
// one cluster does not keep every test's files to its end. A database
// still in use (a store a test left open, a backend still exiting) stays
// until the cluster goes: dropping it by force would cut connections a
// test's goroutines may still be using, and DROP DATABASE waits seconds
// for them to leave.
func (s *Server) drop(name, role string) {
	db, err := sql.Open("pgx", s.base.String())
	if err != nil {
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", name).Scan(&n); err != nil || n > 0 {
		return
	}
	if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil || role == "" {
		return
	}
	_, _ = db.ExecContext(ctx, "DROP ROLE IF EXISTS "+role)
}

// binDir finds initdb and pg_ctl: on PATH, else the Debian layout.
func binDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) == 0 {
		return "", fmt.Errorf("pg_ctl not found on PATH or under /usr/lib/postgresql")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// Launch starts a throwaway cluster outside a test (the bench program uses
// it): the URL of its maintenance database and a stop function that
// stops the server and removes its directory. durable keeps PostgreSQL's
// fsync on (for honest timings); tests run without it.
func Launch(durable bool) (*url.URL, func(), error) {
	var cleanups []func()
	stop := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	u, err := startCluster(durable, func(f func()) { cleanups = append(cleanups, f) })
	if err != nil {
		stop()
		return nil, nil, err
	}
	return u, stop, nil
}

// DatabaseURL creates an empty database on the server at base and returns
// its URL.
func DatabaseURL(base *url.URL, name string) (string, error) {
	db, err := sql.Open("pgx", base.String())
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u := *base
	u.Path = "/" + name
	return u.String(), nil
}

func startCluster(durable bool, cleanup func(func())) (*url.URL, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	// Not t.TempDir: its parents are private to root, and the server may
	// run as nobody. The socket path must also stay short.
	dir, err := os.MkdirTemp("", "engram-pg-")
	if err != nil {
		return nil, err
	}
	cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, err
	}
	runAs := func(name string, args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "nobody", "--", filepath.Join(bin, name)}, args...)...)
		}
		return exec.Command(filepath.Join(bin, name), args...)
	}
	pgUser := "nobody"
	if os.Geteuid() != 0 {
		cur, err := user.Current()
		if err != nil {
			return nil, err
		}
		pgUser = cur.Username
	}
	data := filepath.Join(dir, "data")
	if out, err := runAs("initdb", "-D", data, "-U", pgUser, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, tail(out))
	}
	args := []string{"-k", dir, "-c", "listen_addresses=", "-p", "5432",
		"-c", "max_connections=200", "-c", "shared_buffers=64MB"}
	if !durable {
		// A test cluster: no durability across OS crashes (client
		// processes are still killed for real in the crash tests).
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off")
		// Tests may count what the server plans and runs
		// (pg_stat_statements); the bench's durable clusters run
		// without its overhead.
		if real, err := filepath.EvalSymlinks(filepath.Join(bin, "pg_ctl")); err == nil && fileExists(filepath.Join(filepath.Dir(filepath.Dir(real)), "lib", "pg_stat_statements.so")) {
			args = append(args, "-c", "shared_preload_libraries=pg_stat_statements")
		}
	}
	opts := strings.Join(args, " ")
	logFile := filepath.Join(dir, "server.log")
	if out, err := runAs("pg_ctl", "-D", data, "-o", opts, "-l", logFile, "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(logFile)
		return nil, fmt.Errorf("pg_ctl start: %v: %s %s", err, tail(out), tail(log))
	}
	cleanup(func() {
		runAs("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop").Run()
	})
	// A test binary that dies before its cleanups run (a panicking test
	// under Main, a test timeout, a kill) would leave the server running
	// and its directory behind: a watcher stops and removes them once
	// this process is gone. The stop above ends the watcher first.
	pgCtl := []string{filepath.Join(bin, "pg_ctl")}
	if os.Geteuid() == 0 {
		pgCtl = append([]string{"runuser", "-u", "nobody", "--"}, pgCtl...)
	}
	if err := watchExit(cleanup, `dir=$1; shift; "$@" -D "$dir/data" -m immediate -w stop; rm -rf "$dir"`, append([]string{dir}, pgCtl...)...); err != nil {
		return nil, fmt.Errorf("start the cluster's watcher: %w", err)
	}
	u := &url.URL{Scheme: "postgres", User: url.User(pgUser), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}, "sslmode": {"disable"}}.Encode()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connect to the test cluster: %w", err)
	}
	return u, nil
}

// watchExit starts a watcher that runs then (a sh script, args its $1,
// $2, …) once this process is gone: what a test binary that dies before
// its cleanups leaves (a server, a pooler, their directories) goes with
// it. It is not in the test's process group (an interrupt reaches the
// test only); cleanup stops it.
func watchExit(cleanup func(func()), then string, args ...string) error {
	script := `while kill -0 "$0" 2>/dev/null; do sleep 1; done; ` + then
	watch := exec.Command("sh", append([]string{"-c", script, strconv.Itoa(os.Getpid())}, args...)...)
	detach(watch)
	if err := watch.Start(); err != nil {
		return err
	}
	cleanup(func() {
		watch.Process.Kill()
		watch.Wait()
	})
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// EnvPGVector, set to 1, makes pgvector required: CI installs the
// extension and sets it, so the pgvector path cannot pass by falling back.
const EnvPGVector = "ENGRAM_TEST_PGVECTOR"

// HasPGVector reports whether the server offers the vector extension
// (pgvector 0.8 or later). When it does not, it fails t under
// ENGRAM_TEST_PGVECTOR=1 and returns false otherwise.
func (s *Server) HasPGVector(t testing.TB) bool {
	t.Helper()
	db, err := sql.Open("pgx", s.base.String())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer db.Close()
	var version sql.NullString
	err = db.QueryRow(`SELECT max(version) FROM pg_available_extension_versions
		WHERE name = 'vector' AND string_to_array(version, '.')::int[] >= '{0,8}'`).Scan(&version)
	if err != nil {
		t.Fatalf("pgtest: read available extensions: %v", err)
	}
	if !version.Valid {
		if os.Getenv(EnvPGVector) == "1" {
			t.Fatalf("pgtest: %s=1 but the server has no pgvector 0.8+", EnvPGVector)
		}
		return false
	}
	return true
}

// NewRoleDatabase creates a login role without superuser rights and an
// empty database it owns, and returns the database's URL as that role:
// what a hosted PostgreSQL gives an application.
func (s *Server) NewRoleDatabase(t testing.TB) string {
	t.Helper()
	n := dbSeq.Add(1)
	role := fmt.Sprintf("engram_role_%s_%d", runID, n)
	name := fmt.Sprintf("engram_%s_%d", runID, n)
	db, err := sql.Open("pgx", s.base.String())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"CREATE DATABASE " + name + " OWNER " + role,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("pgtest: %s: %v", q, err)
		}
	}
	t.Cleanup(func() { s.drop(name, role) })
	u := *s.base
	u.User = url.User(role)
	u.Path = "/" + name
	return u.String()
}

// SuperuserURL is dsn (a database on s) connected as the server's
// administrative user instead.
func (s *Server) SuperuserURL(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	u.User = s.base.User
	return u.String()
}

// DirectURL is dsn (a database on s, perhaps through its pooler) on the
// server itself, past the pooler.
func (s *Server) DirectURL(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	d := *s.base
	d.Path = u.Path
	return d.String()
}
