package main

import (
	"strings"
	"testing"
)

// archival add --meta stores a JSON object as the entry's metadata (a
// numbered session names its conversation) and refuses anything else.
func TestArchivalAddMeta(t *testing.T) {
	db := t.TempDir() + "/m.db"
	for _, tc := range []struct {
		meta, want string
		fail       bool
	}{
		{`{"session": 3, "speaker": "Ada"}`, `"session":3`, false},
		{`[1]`, "", true},
		{`null`, "", true},
		{`{`, "", true},
	} {
		out, errOut, code := cli(t, db, "", "--json", "archival", "add", "--agent", "ada", "--meta", tc.meta, "Ada adopted a greyhound.")
		if tc.fail != (code != 0) {
			t.Fatalf("--meta %s: exit %d, output %s %s", tc.meta, code, out, errOut)
		}
		if !tc.fail && !strings.Contains(strings.ReplaceAll(out, " ", ""), tc.want) {
			t.Errorf("--meta %s: output %s lacks %s", tc.meta, out, tc.want)
		}
	}
}

// archival add of a text the agent already holds (up to case and spacing)
// says so instead of reporting a new entry.
func TestArchivalAddSaysDuplicate(t *testing.T) {
	db := t.TempDir() + "/m.db"
	for i, tc := range []struct{ text, want string }{
		{"The deploy is on Friday.", "archival entry 1 added"},
		{"the deploy is   on friday.", "archival entry 1 already holds this text"},
	} {
		out, errOut, code := cli(t, db, "", "archival", "add", "--agent", "ada", tc.text)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Fatalf("add %d (%q): exit %d, output %q %q, want %q", i, tc.text, code, out, errOut, tc.want)
		}
	}
}
