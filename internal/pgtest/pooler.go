package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// EnvPooler, set to 1, makes PgBouncer required: CI installs it and sets
// it, so the tests through a pooler cannot pass by skipping.
const EnvPooler = "ENGRAM_TEST_PGBOUNCER"

// Pooler starts PgBouncer in transaction mode (each transaction, and
// each statement outside one, on whichever server connection is free:
// what a pooler in front of a busy PostgreSQL does) in front of s, for
// the length of t, and returns a Server whose NewDatabase URLs go through
// it, with default_query_exec_mode set to execMode ("" for exec:
// PgBouncer before 1.21 keeps no named prepared statement across server
// connections). Without a pgbouncer binary t skips, or fails under
// CI=true or EnvPooler=1.
func (s *Server) Pooler(t testing.TB, execMode string) *Server {
	t.Helper()
	return s.PoolerWith(t, execMode)
}

// PoolerWith is Pooler with more lines for pgbouncer.ini's [pgbouncer]
// section ("query_timeout = 1"), after (and so over) Pooler's own.
func (s *Server) PoolerWith(t testing.TB, execMode string, settings ...string) *Server {
	t.Helper()
	bin, err := poolerBinary()
	if err != nil {
		if os.Getenv("CI") == "true" || os.Getenv(EnvPooler) == "1" {
			t.Fatalf("pgtest: no pgbouncer (CI requires it): %v", err)
		}
		t.Skipf("pgtest: no pgbouncer (install it to run the tests through a pooler): %v", err)
	}
	u, err := startPooler(bin, s.base, t.Cleanup, settings)
	if err != nil {
		t.Fatalf("pgtest: start pgbouncer: %v", err)
	}
	if execMode != "" {
		q := u.Query()
		q.Set("default_query_exec_mode", execMode)
		u.RawQuery = q.Encode()
	}
	t.Cleanup(func() {
		// Run before the directory goes: a failure through the pooler may
		// be the pooler's.
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(u.Query().Get("host"), "pgbouncer.log"))
			t.Logf("pgtest: pgbouncer's log ends:\n%s", tail(log))
		}
	})
	return &Server{base: s.base, pooled: u}
}

// LaunchPooler starts PgBouncer as Pooler does, outside a test (the bench
// program uses it), in front of the server at base: the URL of base's
// maintenance database through it (with default_query_exec_mode=exec)
// and a stop function. It fails when there is no pgbouncer binary.
func LaunchPooler(base *url.URL) (*url.URL, func(), error) {
	bin, err := poolerBinary()
	if err != nil {
		return nil, nil, err
	}
	var cleanups []func()
	stop := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	u, err := startPooler(bin, base, func(f func()) { cleanups = append(cleanups, f) }, nil)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return u, stop, nil
}

// PooledURL is dsn, a database's URL on a server, with the host, port
// and query of pooler (a LaunchPooler URL) instead: the same database
// through the pooler.
func PooledURL(pooler *url.URL, dsn string) (string, error) {
	d, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	u := *pooler
	u.Path = d.Path
	return u.String(), nil
}

// poolerBinary finds pgbouncer: on PATH, else where Debian puts it.
func poolerBinary() (string, error) {
	if bin, err := exec.LookPath("pgbouncer"); err == nil {
		return bin, nil
	}
	if fileExists("/usr/sbin/pgbouncer") {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", fmt.Errorf("pgbouncer not found on PATH or in /usr/sbin")
}

// poolerPort is the port in the name of PgBouncer's unix socket (in a
// directory of its own, so it collides with nothing).
const poolerPort = 6432

func startPooler(bin string, base *url.URL, cleanup func(func()), settings []string) (*url.URL, error) {
	dir, err := os.MkdirTemp("", "engram-pgbouncer-")
	if err != nil {
		return nil, err
	}
	cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil { // PgBouncer may run as nobody
		return nil, err
	}
	q := base.Query()
	host, port := q.Get("host"), q.Get("port")
	if host == "" {
		host = base.Hostname()
	}
	if port == "" {
		port = base.Port()
	}
	if port == "" {
		port = "5432"
	}
	user := base.User.Username()
	server := fmt.Sprintf("host=%s port=%s user=%s", host, port, user)
	if pw, ok := base.User.Password(); ok {
		server += " password=" + pw
	}
	ini := fmt.Sprintf(`[databases]
* = %s
[pgbouncer]
listen_addr =
unix_socket_dir = %s
listen_port = %d
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 10
server_idle_timeout = 2
ignore_startup_parameters = extra_float_digits
logfile = %s
`, server, dir, poolerPort, filepath.Join(dir, "users.txt"), filepath.Join(dir, "pgbouncer.log"))
	for _, line := range settings {
		ini += line + "\n"
	}
	for name, data := range map[string]string{
		"pgbouncer.ini": ini,
		"users.txt":     strconv.Quote(user) + ` ""` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return nil, err
		}
	}
	// PgBouncer refuses to run as root.
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", "-u", "nobody", "--", bin, filepath.Join(dir, "pgbouncer.ini"))
	}
	detach(cmd) // an interrupt reaches the test only
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM) // an immediate shutdown (SIGINT waits for clients)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	cleanup(stop)
	// One that outlives this process (a test timeout, a kill) goes with
	// it, as a cluster does.
	if err := watchExit(cleanup, `kill "$1"; sleep 1; rm -rf "$2"`, strconv.Itoa(cmd.Process.Pid), dir); err != nil {
		return nil, fmt.Errorf("start pgbouncer's watcher: %w", err)
	}
	u := &url.URL{Scheme: "postgres", User: url.User(user), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}, "port": {strconv.Itoa(poolerPort)}, "sslmode": {"disable"},
			"default_query_exec_mode": {"exec"}}.Encode()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	for {
		err = db.PingContext(ctx)
		if err == nil {
			return u, nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			return nil, fmt.Errorf("pgbouncer exited: %s", tail(log))
		case <-ctx.Done():
			return nil, fmt.Errorf("connect through pgbouncer: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
