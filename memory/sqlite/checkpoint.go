package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/engram-go/engram/internal/sqlitedriver"
)

// Checkpoints. In WAL mode SQLite copies the WAL back into the database
// file (a checkpoint: every page the WAL holds written once, the WAL and
// the file synced) once the WAL passes wal_autocheckpoint frames (1,000 by
// default), and it does so in the commit that passed it, on the
// committing connection, after the write lock is released but before the
// commit returns. The writer whose small commit happens to cross the line
// pays for every page the others wrote: beside a process storing
// megabyte-sized rows that is milliseconds to tens of milliseconds, on a
// write that costs a fraction of one.
//
// So the writer connection checkpoints only as a backstop
// (writerAutoCheckpoint frames), and a checkpointer goroutine of the
// backend does the work in the background: after each commit of this
// process it reads how many frames the WAL holds past its last checkpoint
// (the wal-index header, see walPending) and, once that reaches
// checkpointFrames, runs a PASSIVE checkpoint on a reader connection. A
// PASSIVE checkpoint takes neither the write lock nor a reader's, so
// writers and readers go on while it copies and syncs.
//
// SQLite starts the WAL over from its beginning only when a write begins
// with every frame copied back; writers that went on during the copy
// leave a few frames behind, and under steady writes the WAL would grow
// to the backstop. So the checkpointer copies again what was written
// during its copy (a few times, less each time), and once fewer than
// finishFrames are left it copies those holding the writer connection (this
// process's writes wait for that short pass, the few pages and the two
// syncs; other processes' do not), and the next write starts the WAL
// over. What a commit makes durable is unchanged: a commit is in the WAL
// when it returns, whoever copies it to the database file later.

const (
	// checkpointFrames is the WAL size (frames past the last checkpoint)
	// at which the checkpointer copies the WAL back: SQLite's default
	// wal_autocheckpoint.
	checkpointFrames = 1000
	// writerAutoCheckpoint is the writer connection's wal_autocheckpoint:
	// a backstop, should the checkpointer fall behind (or other
	// processes' writes keep the WAL from starting over).
	writerAutoCheckpoint = 4 * checkpointFrames
	// finishFrames: a background copy that leaves fewer frames than this
	// behind is finished on the writer connection (see above); more, and
	// the writers outrun it: the next copy comes at checkpointFrames.
	finishFrames = checkpointFrames / 4
	// longWALFrames: a WAL this long that has not started over is
	// finished on the writer connection whatever the background copies
	// left behind (writers that outrun the copies, or a checkpointer
	// that a loaded machine scheduled late), so it starts over before
	// the backstop.
	longWALFrames = 2 * checkpointFrames
	// copyPasses bounds the background copies run for one look: each
	// copies what writers added during the one before.
	copyPasses = 4
	// checkpointCommits is how many looks (each after one commit of this
	// process or more) make a checkpoint due when the WAL's size cannot be
	// read (no -shm file SQLite maps: another VFS, or a name only SQLite
	// resolves).
	checkpointCommits = 256
)

// checkpointer runs the backend's checkpoints (see above).
type checkpointer struct {
	db      *sql.DB // where the background copy runs (the reader pool)
	wdb     *sql.DB // the writer's one connection: the finishing pass
	shmPath string  // the wal-index: the database file + "-shm"
	kick    chan struct{}
	stop    chan struct{}
	stopped sync.Once
	done    sync.WaitGroup

	// runs counts the background copies, finishes the finishing passes
	// (for tests).
	runs, finishes atomic.Int64
}

// newCheckpointer starts the checkpointer of the database file file
// ("" when SQLite resolves the name itself: the WAL's size is then not
// read, and checkpointCommits looks make a checkpoint due).
func newCheckpointer(db, wdb *sql.DB, file string) *checkpointer {
	c := &checkpointer{db: db, wdb: wdb, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	if file != "" {
		c.shmPath = file + "-shm"
	}
	c.done.Add(1)
	go c.loop()
	return c
}

// committed tells the checkpointer that this process committed a write.
func (c *checkpointer) committed() {
	select {
	case c.kick <- struct{}{}:
	default: // one pending look covers every commit before it
	}
}

// close stops the checkpointer and waits for a checkpoint under way.
func (c *checkpointer) close() {
	c.stopped.Do(func() { close(c.stop) })
	c.done.Wait()
}

func (c *checkpointer) loop() {
	defer c.done.Done()
	var shm *os.File
	defer func() {
		if shm != nil {
			shm.Close()
		}
	}()
	commits := 0
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		commits++
		if shm == nil && c.shmPath != "" {
			shm, _ = os.Open(c.shmPath)
		}
		due := commits >= checkpointCommits
		if size, n, ok := walSize(shm); ok {
			due = n >= checkpointFrames || (size >= longWALFrames && n > 0)
		} else if shm != nil {
			shm.Close() // reopened next time: the file may have been replaced
			shm = nil
		}
		if !due {
			continue
		}
		commits = 0
		// Errors are not the caller's: the next commit tries again, and
		// the writer's backstop holds the WAL's size meanwhile. Each copy
		// leaves behind what was written while it ran, less each time.
		for pass := range copyPasses {
			if _, err := c.db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
				break
			}
			c.runs.Add(1)
			size, n, ok := walSize(shm)
			if !ok || n == 0 {
				break
			}
			// Writers that outrun every pass would otherwise leave the
			// WAL to grow to the backstop: past longWALFrames the last
			// pass finishes on the writer whatever is left.
			if n < finishFrames || (pass == copyPasses-1 && size >= longWALFrames) {
				c.finish()
				break
			}
		}
	}
}

// finish copies back what writers added during a background copy,
// holding the writer connection (the pool's only one): with every frame
// copied, this process's next write starts the WAL over.
func (c *checkpointer) finish() {
	ctx := context.Background()
	conn, err := c.wdb.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err == nil {
		c.finishes.Add(1)
	}
}

// walIndexVersion is the wal-index header's iVersion (SQLite 3.7.0 on).
const walIndexVersion = 3007000

// walPending reads from shm, SQLite's wal-index (the -shm file, which SQLite
// maps shared, so a read sees its current contents), how many frames the
// WAL holds past the last checkpoint: the header's mxFrame (offset 16)
// less the checkpoint record's nBackfill (offset 96), in native byte
// order (https://sqlite.org/walformat.html). ok is false when shm is nil
// or unreadable or its header is not one this knows. A read racing a
// writer's update may be off; it is a heuristic, and the next commit reads
// again.
func walPending(shm *os.File) (frames uint32, ok bool) {
	_, frames, ok = walSize(shm)
	return frames, ok
}

// walSize reads the WAL's size in frames (mxFrame) beside the frames
// past the last checkpoint (walPending).
func walSize(shm *os.File) (size, pending uint32, ok bool) {
	if shm == nil {
		return 0, 0, false
	}
	var h [100]byte
	if _, err := shm.ReadAt(h[:], 0); err != nil {
		return 0, 0, false
	}
	if binary.NativeEndian.Uint32(h[0:]) != walIndexVersion {
		return 0, 0, false
	}
	mx, backfilled := binary.NativeEndian.Uint32(h[16:]), binary.NativeEndian.Uint32(h[96:])
	if backfilled > mx {
		return mx, 0, true
	}
	return mx, mx - backfilled, true
}

// pragmaConnector opens connections to dsn with d and runs pragmas on
// each, so a connection database/sql opens again (after a broken one)
// gets them too. (The drivers' DSNs have no common key for them.)
type pragmaConnector struct {
	d       driver.Driver
	dsn     string
	pragmas []string
}

func (c pragmaConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	for _, p := range c.pragmas {
		if err := execConn(ctx, conn, p); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return conn, nil
}

func (c pragmaConnector) Driver() driver.Driver { return c.d }

// execConn runs one statement without arguments on a driver connection
// (both drivers' connections execute directly).
func execConn(ctx context.Context, conn driver.Conn, query string) error {
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		return fmt.Errorf("driver connection %T cannot execute", conn)
	}
	_, err := ex.ExecContext(ctx, query, nil)
	return err
}

// openWithPragmas opens a pool on the build's driver whose every
// connection runs pragmas first.
func openWithPragmas(dsn string, pragmas ...string) (*sql.DB, error) {
	probe, err := sql.Open(sqlitedriver.Name, dsn) // does not connect
	if err != nil {
		return nil, err
	}
	d := probe.Driver()
	probe.Close()
	return sql.OpenDB(pragmaConnector{d: d, dsn: dsn, pragmas: pragmas}), nil
}
