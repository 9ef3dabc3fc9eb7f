package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTokenCLI: create prints the secret once as the last word of its
// last line; list and --json never show it; revoke takes effect.
func TestTokenCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tok.db")
	out := ok(t, db, "token", "create", "--agent", "ada", "--name", "laptop", "--expires", "720h")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	words := strings.Fields(lines[len(lines)-1])
	secret := words[len(words)-1]
	if !strings.HasPrefix(secret, "engram_") || len(secret) < 50 {
		t.Fatalf("create printed %q", out)
	}
	ok(t, db, "token", "create", "--human", "alice")
	var created tokenJSON
	if err := json.Unmarshal([]byte(ok(t, db, "token", "create", "--agent", "bob", "--read-only", "--json")), &created); err != nil || created.Token == "" || !created.ReadOnly {
		t.Fatalf("create --json: %+v %v", created, err)
	}
	list := ok(t, db, "token", "list")
	js := ok(t, db, "token", "list", "--json")
	for _, s := range []string{list, js} {
		if strings.Contains(s, secret) || strings.Contains(s, created.Token) {
			t.Fatalf("token list shows a secret:\n%s", s)
		}
	}
	if !strings.Contains(list, "agent:ada") || !strings.Contains(list, "laptop") || !strings.Contains(list, "human:alice") || !strings.Contains(list, "read-only") {
		t.Fatalf("token list:\n%s", list)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(js), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("list --json: %v\n%s", err, js)
	}
	for _, k := range []string{"id", "agent", "name", "read_only", "created_at", "expires_at", "last_used_at", "revoked_at"} {
		if _, found := rows[0][k]; !found {
			t.Errorf("list --json lacks %q: %v", k, rows[0])
		}
	}
	ok(t, db, "token", "revoke", "1")
	if _, errs, code := cli(t, db, "", "token", "revoke", "1"); code != 1 || strings.TrimSpace(errs) != "engram: token revoke: token 1 is already revoked" {
		t.Fatalf("second revoke: exit %d %s", code, errs)
	}
	if _, errs, code := cli(t, db, "", "token", "revoke", "99"); code != 1 || strings.TrimSpace(errs) != `engram: token revoke: no token 99 (run "engram token list")` {
		t.Fatalf("revoke of an unknown token: exit %d %s", code, errs)
	}

	if !strings.Contains(ok(t, db, "token", "list", "--json"), `"revoked_at": "`) {
		t.Fatal("revocation not listed")
	}
	for _, args := range [][]string{{"token", "create"}, {"token", "create", "--agent", "a", "--human", "b"}, {"token", "revoke", "x"}, {"token", "revoke"}} {
		if _, _, code := cli(t, db, "", args...); code != 2 {
			t.Errorf("engram %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
}

// runAsync runs a command in-process, its output readable while it runs.
func runAsync(t *testing.T, ctx context.Context, args ...string) (*bufio.Reader, *lockedBuilder, chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	var errb lockedBuilder
	done := make(chan int, 1)
	go func() {
		code := run(ctx, args, strings.NewReader(""), pw, &errb)
		pw.Close()
		done <- code
	}()
	return bufio.NewReader(pr), &errb, done
}

// TestServeCommand runs "engram serve" in-process: it prints its
// addresses, serves MCP with a token over TLS, warns about a non-loopback
// address without TLS, and stops cleanly when its context ends.
func TestServeCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "serve.db")
	out := ok(t, db, "token", "create", "--agent", "ada")
	secret := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n"):])
	cert, key := selfSigned(t, dir)

	ctx, cancel := context.WithCancel(context.Background())
	stdout, _, done := runAsync(t, ctx, "--db", db, "--json", "serve", "--addr", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key)
	var info map[string]string
	if err := json.NewDecoder(stdout).Decode(&info); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stdout)
	if !strings.HasPrefix(info["mcp"], "https://127.0.0.1:") {
		t.Fatalf("serve printed %v", info)
	}
	base := strings.TrimSuffix(info["mcp"], "/mcp")
	pool := x509.NewCertPool()
	certPEM, _ := os.ReadFile(cert)
	pool.AppendCertsFromPEM(certPEM)
	cs, err := connectMCPVia(ctx, base, secret, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := callTool(t, cs, "archival_insert", map[string]any{"content": "over TLS"}); isErr {
		t.Fatal(text)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}

	// Any address but loopback without TLS: a warning.
	ctx2, cancel2 := context.WithCancel(context.Background())
	stdout2, stderr2, done2 := runAsync(t, ctx2, "--db", db, "serve", "--addr", "0.0.0.0:0")
	line, _ := stdout2.ReadString('\n')
	go io.Copy(io.Discard, stdout2)
	cancel2()
	<-done2
	if !strings.Contains(line, "engram serve") || !strings.Contains(stderr2.String(), "warning") {
		t.Fatalf("0.0.0.0 without TLS: stdout %q, stderr %q", line, stderr2.String())
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "engram test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}
