// Package abuse measures what hostile requests cost a running engram
// serve, and whether another agent working at the same time notices: the
// harness behind cmd/engram's serve_abuse_test.go and the bench's "serve
// under abuse" section.
//
// A Harness seeds a fresh SQLite store (a victim agent's block, an
// attacker agent's block of 5,000 characters, a token for the victim and
// a read-write and a read-only token for the attacker), starts engram
// serve on it as a child process (Options.Command), and keeps a victim
// calling block_append over MCP through the go-sdk client at a steady
// pace, recording every call's latency and every acknowledged write.
// It measures the victim's quiet latency and the server's idle CPU
// first. Run then measures one Attack: its payload is made beforehand,
// and from just before its requests until the server is idle again the
// harness samples the child's CPU time (/proc/PID/stat utime + stime,
// less the idle rate) and peak resident set (VmHWM, reset through
// clear_refs, and VmRSS sampled every 20 ms), and takes the victim's
// calls started in that time as its latency under attack. After each
// attack the process must be alive and answer /healthz, and every write
// the victim had acknowledged must be in the store.
//
// Goal is the bound: any single request by any token costs at most 2 s
// of server CPU and 256 MiB of peak RSS growth; the victim's p99 under
// attack is at most twice its quiet p99; no acknowledged write is lost;
// the process never exits. Result.Violations says how an attack breaks it.
//
// The package is Linux-only in what it measures (/proc); it is a test
// and bench helper, not part of engram's API.
package abuse
