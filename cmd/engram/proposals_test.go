package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCLIProposals walks the pending queue from a terminal: an agent's
// write to a Human block becomes a proposal, which a person lists (with
// the diff), approves or rejects by id.
func TestCLIProposals(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "goals", "--perm", "Human", "--value", "Ship the UI.")
	out := ok(t, db, "proposals", "list")
	if !strings.Contains(out, "no pending proposals") {
		t.Fatalf("empty queue:\n%s", out)
	}
	if out = ok(t, db, "proposals", "list", "--all"); !strings.Contains(out, "no proposals") || strings.Contains(out, "pending") {
		t.Fatalf("no proposals at all:\n%s", out)
	}
	// An agent's write to its Human block waits for a person.
	// It succeeded: exit 0, the proposal's id on stdout.
	if out, errs, code := cli(t, db, "", "block", "append", "--agent", "ada", "--as-agent", "goals", " Then test it."); code != 0 || !strings.Contains(out, "proposal #1 queued for approval") {
		t.Fatalf("write to a Human block: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out = ok(t, db, "proposals", "list", "--diff")
	for _, want := range []string{"ada/goals", "append_text", "pending", "- Ship the UI.", "+ Ship the UI. Then test it."} {
		if !strings.Contains(out, want) {
			t.Errorf("proposals list --diff lacks %q:\n%s", want, out)
		}
	}
	out = ok(t, db, "--json", "proposals", "list", "--agent", "ada", "--diff")
	var ps []struct {
		ID     int64
		Status string
		After  string `json:"after"`
	}
	if err := json.Unmarshal([]byte(out), &ps); err != nil || len(ps) != 1 || ps[0].After != "Ship the UI. Then test it." {
		t.Fatalf("proposals list --json: %v\n%s", err, out)
	}
	// Bad input is a clear error.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proposals", "approve"}, "want one proposal ID"},
		{[]string{"proposals", "approve", "x"}, `"x" is not a proposal ID`},
		{[]string{"proposals", "approve", "99"}, "proposal 99"},
		{[]string{"proposals", "frobnicate"}, `unknown subcommand "frobnicate"`},
	} {
		if _, errs, code := cli(t, db, "", tc.args...); code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("engram %s: exit %d, stderr %q, want %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
	out = ok(t, db, "proposals", "approve", "--as", "alice", "#1")
	if !strings.Contains(out, "proposal 1 approved by human:alice") {
		t.Fatalf("approve:\n%s", out)
	}
	if out = ok(t, db, "block", "show", "--agent", "ada", "goals"); !strings.Contains(out, "Ship the UI. Then test it.") {
		t.Fatalf("goals after approval:\n%s", out)
	}
	if _, errs, code := cli(t, db, "", "proposals", "approve", "1"); code == 0 || !strings.Contains(errs, "already approved") {
		t.Fatalf("approve twice: exit %d, %s", code, errs)
	}
	// A second proposal, rejected with a reason: the block keeps its text.
	if out, errs, code := cli(t, db, "", "block", "set", "--agent", "ada", "--as-agent", "goals", "Nothing."); code != 0 || !strings.Contains(out, "proposal #2 queued for approval") {
		t.Fatalf("second proposal: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out = ok(t, db, "proposals", "reject", "--as", "alice", "--reason", "not now", "2")
	if !strings.Contains(out, "proposal 2 rejected by human:alice") {
		t.Fatalf("reject:\n%s", out)
	}
	if out = ok(t, db, "block", "show", "--agent", "ada", "goals"); !strings.Contains(out, "Ship the UI. Then test it.") {
		t.Fatalf("a rejected proposal changed the block:\n%s", out)
	}
	if out = ok(t, db, "proposals", "list"); !strings.Contains(out, "no pending proposals") {
		t.Fatalf("queue after deciding both:\n%s", out)
	}
	out = ok(t, db, "--json", "proposals", "list", "--all")
	var all []struct {
		ID        int64
		Status    string
		Reason    string
		DecidedBy string `json:"decided_by"` // snake_case
	}
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 2 || all[0].Status != "approved" ||
		all[1].Status != "rejected" || !strings.Contains(all[1].Reason, "not now") || all[1].DecidedBy != "human:alice" {
		t.Fatalf("list --all: %v\n%s", err, out)
	}
}

// TestCLIUI starts "engram ui", opens the printed URL and stops it with
// the context (Ctrl-C).
func TestCLIUI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ui.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--value", "I am Ada.")
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var errb strings.Builder
	var wg sync.WaitGroup
	code := -1
	wg.Add(1)
	go func() {
		defer wg.Done()
		code = run(ctx, []string{"--db", db, "ui", "--as", "alice"}, strings.NewReader(""), pw, &errb)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var link string
	for sc.Scan() && link == "" {
		link = regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}`).FindString(sc.Text())
	}
	go io.Copy(io.Discard, pr)
	if link == "" {
		cancel()
		wg.Wait()
		t.Fatalf("no URL with a token printed; stderr %s", errb.String())
	}
	base := link[:strings.Index(link, "/?token")]
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: status %d, want 401", res.StatusCode)
	}
	res, err = c.Get(link) // follows the redirect, but without a jar loses the cookie
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	req, _ := http.NewRequest(http.MethodGet, base+"/blocks/ada/persona", nil)
	for _, ck := range res.Request.Response.Cookies() {
		req.AddCookie(ck)
	}
	res, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "I am Ada.") || !strings.Contains(string(body), "human:alice") {
		t.Errorf("block page with the session: status %d\n%s", res.StatusCode, body)
	}
	cancel()
	wg.Wait()
	if code != 0 {
		t.Fatalf("engram ui exited %d after Ctrl-C: %s", code, errb.String())
	}
}
