package main

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// procCPU is the CPU time (user + system) process pid has used.
func procCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("read /proc/%d/stat: %v", pid, err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
}

// procHWM is process pid's peak resident set (VmHWM), in bytes.
func procHWM(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("read /proc/%d/status: %v", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// procAlive reports whether process pid runs (not gone, not a zombie).
func procAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// abuseServe is an engram serve child process on a store with ada's block
// "notes" (limit chars, the given number of store edits), its document
// URL, and an ordinary and a read-only token of ada's.
type abuseServe struct {
	base, ws   string
	pid        int
	docID      string
	rw, ro     string
	store, url string
	heads      []string // the block's heads (hex) when serve started
}

func startAbuseServe(t *testing.T, limit, edits int, value string) *abuseServe {
	t.Helper()
	if os.Getenv("ENGRAM_SERVE_CHILD") != "" {
		t.Skip("child")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "abuse.db")
	store := openServeStoreAt(t, path)
	if _, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: value, CharLimit: limit}); err != nil {
		t.Fatal(err)
	}
	for i := range edits {
		if err := store.Agent("ada").Block("notes").Append(ctx, " e"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	id, err := store.Agent("ada").Block("notes").DocumentID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := store.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	heads := doc.Heads()
	_, rw := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	_, ro := newToken(t, store, accesstoken.Spec{Agent: "ada", ReadOnly: true})
	store.Close()
	base, cmd := startServeProcess(t, path)
	url := syncrepo.URL(id)
	docID, _ := strings.CutPrefix(url, syncrepo.URLPrefix)
	return &abuseServe{base: base, ws: "ws" + strings.TrimPrefix(base, "http") + "/sync?token=", pid: cmd.Process.Pid,
		docID: docID, rw: rw, ro: ro, store: path, url: url, heads: heads}
}

// rawPeer is a /sync connection that sends whatever bytes a test makes.
type rawPeer struct {
	t *testing.T
	c *websocket.Conn
}

func dialRaw(t *testing.T, wsURL string) *rawPeer {
	t.Helper()
	ctx := context.Background()
	c, _, err := dialSync(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	p := &rawPeer{t: t, c: c}
	if err := p.send(syncrepo.Message{Type: syncrepo.TypeJoin, SupportedProtocolVersions: []string{"1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.read(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *rawPeer) send(m syncrepo.Message) error {
	m.SenderID = "raw-peer"
	b, err := syncrepo.EncodeMessage(m)
	if err != nil {
		return err
	}
	return p.c.Write(context.Background(), websocket.MessageBinary, b)
}

func (p *rawPeer) read(d time.Duration) (syncrepo.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, b, err := p.c.Read(ctx)
	if err != nil {
		return syncrepo.Message{}, err
	}
	return syncrepo.DecodeMessage(b)
}

// syncMessage is a v1 sync message: heads, needs, haves (each a Bloom
// filter's bytes with no last-sync hashes), changes.
func syncMessage(heads [][]byte, needs int, haves [][]byte, changes [][]byte) []byte {
	msg := []byte{0x42}
	msg = binary.AppendUvarint(msg, uint64(len(heads)))
	for _, h := range heads {
		msg = append(msg, h...)
	}
	msg = binary.AppendUvarint(msg, uint64(needs))
	for i := range needs {
		h := make([]byte, 32)
		binary.LittleEndian.PutUint32(h, uint32(i))
		msg = append(msg, h...)
	}
	msg = binary.AppendUvarint(msg, uint64(len(haves)))
	for _, b := range haves {
		msg = append(msg, 0) // no last-sync hashes
		msg = binary.AppendUvarint(msg, uint64(len(b)))
		msg = append(msg, b...)
	}
	msg = binary.AppendUvarint(msg, uint64(len(changes)))
	for _, c := range changes {
		msg = binary.AppendUvarint(msg, uint64(len(c)))
		msg = append(msg, c...)
	}
	return msg
}

// bloom is a Bloom filter's bytes as automerge encodes them: entries, bits
// per entry, probes, then the bits (each byte fill).
func bloom(entries, bitsPerEntry, probes uint64, fill byte) []byte {
	b := binary.AppendUvarint(nil, entries)
	b = binary.AppendUvarint(b, bitsPerEntry)
	b = binary.AppendUvarint(b, probes)
	for range (entries*bitsPerEntry + 7) / 8 {
		b = append(b, fill)
	}
	return b
}

// cost measures what f makes process pid spend: CPU time and growth of
// its peak resident set.
func cost(t *testing.T, pid int, f func()) (cpu time.Duration, hwm int64) {
	t.Helper()
	c0, h0 := procCPU(t, pid), procHWM(t, pid)
	f()
	if !procAlive(pid) {
		t.Fatalf("engram serve exited")
	}
	return procCPU(t, pid) - c0, procHWM(t, pid) - h0
}
