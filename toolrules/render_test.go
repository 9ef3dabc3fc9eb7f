package toolrules

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestRenderGolden(t *testing.T) {
	rules := append(mixedRules(),
		MaxCalls("api_request", 1),
		MaxCalls("archive", 0),
		Cooldown("backup", 90*time.Minute),
		Cooldown("poll", 1500*time.Millisecond),
		RequiresPrior("publish", "review", "write", "review"),
		RequiresFollowing("plan", "review", "execute"),
		ExclusiveGroup("b", "a"),
		MaxCalls("api_request", 3), // duplicate: rendered once
		ContinueLoop("archival_search"),
		RequiresConsent("tick`tock"),
		ExitLoop("two\nlines"),
	)
	got := Render(rules)
	path := filepath.Join("testdata", "render.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestRenderGolden -update)", err)
	}
	if got+"\n" != string(want) {
		t.Fatalf("Render mismatch (run with -update to accept)\n--- got\n%s\n--- want\n%s", got, want)
	}
}

func TestRenderVerbatim(t *testing.T) {
	got := Render([]Rule{
		MaxCalls("api_request", 3),
		ContinueLoop("search"),
		ExitLoop("send_message"),
		StartConstraint("context"),
	})
	want := "# Tool Execution Rules\n\n" +
		"- Call `context` first before any other tools\n" +
		"- The conversation will end after calling `send_message`\n" +
		"- The conversation will be continued after calling `search`\n" +
		"- Call `api_request` at most 3 times"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRenderOrderAndDuplicates(t *testing.T) {
	rules := []Rule{
		RequiresPrior("write", "read"),
		MaxCalls("b", 2),
		RequiresPrior("write", "plan"),
		MaxCalls("a", 5),
		MaxCalls("b", 2),
		RequiresPrior("write", "read", "read"), // same as the first once repeats are dropped
		StartConstraint("z"),
		RequiresConsent("a"),
	}
	want := "# Tool Execution Rules\n\n" +
		"- Call `z` first before any other tools\n" +
		"- Call `a` at most 5 times\n" +
		"- Call `b` at most 2 times\n" +
		"- Call `write` only after calling `read`\n" + // ties keep input order
		"- Call `write` only after calling `plan`\n" +
		"- Each call to `a` requires approval"
	if got := Render(rules); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// Same rules in another order (keeping the order of ties) render the same.
	shuffled := []Rule{rules[7], rules[3], rules[0], rules[6], rules[1], rules[2], rules[4]}
	if got := Render(shuffled); got != want {
		t.Fatalf("shuffled: got\n%s\nwant\n%s", got, want)
	}
	// Render does not modify its input.
	if !reflect.DeepEqual(rules[5].Tools, []string{"read", "read"}) {
		t.Fatalf("input modified: %v", rules[5].Tools)
	}
}

func TestRenderEmpty(t *testing.T) {
	if got := Render(nil); got != "" {
		t.Fatalf("Render(nil) = %q", got)
	}
	if got := Render([]Rule{{Kind: "bogus", Tool: "x"}}); got != "" {
		t.Fatalf("Render(unknown) = %q", got)
	}
}

func TestRenderEscapesToolNames(t *testing.T) {
	cases := map[string]string{
		"a`b":              "``a`b``",
		"`edge`":           "`` `edge` ``",
		"x\n# Heading":     "`x # Heading`",
		"cr\rlf\ttab":      "`cr lf tab`",
		"``":               "``` `` ```",
		" padded ":         "`  padded  `",
		"ls\u2028sep":      "`ls sep`",
		"plain_tool-name1": "`plain_tool-name1`",
	}
	for name, span := range cases {
		got := Render([]Rule{ExitLoop(name)})
		want := Heading + "\n\n- The conversation will end after calling " + span
		if got != want {
			t.Errorf("name %q: got %q, want %q", name, got, want)
		}
		if strings.Count(got, "\n") != 2 {
			t.Errorf("name %q broke the line structure: %q", name, got)
		}
	}
}

func TestRuleSentences(t *testing.T) {
	cases := []struct {
		r    Rule
		want string
	}{
		{MaxCalls("x", 1), "Call `x` at most 1 time"},
		{MaxCalls("x", 0), "Never call `x`"},
		{Cooldown("x", 90*time.Second), "Wait at least 1m30s between calls to `x`"},
		{Cooldown("x", 2*time.Hour), "Wait at least 2h between calls to `x`"},
		{Cooldown("x", 500*time.Millisecond), "Wait at least 500ms between calls to `x`"},
		{RequiresPrior("w", "a", "b", "c"), "Call `w` only after calling `a`, `b` and `c`"},
		{ExclusiveGroup("a", "b"), "Use only one of `a` or `b`"},
		{Rule{Kind: KindExclusiveGroup, Tool: "a", Tools: []string{"a", "b"}}, "Use only one of `a` or `b`"},
		{Rule{Kind: "bogus"}, ""},
	}
	for _, c := range cases {
		if got := c.r.String(); got != c.want {
			t.Errorf("%#v: got %q, want %q", c.r, got, c.want)
		}
	}
}

func allKinds() []Rule {
	return []Rule{
		StartConstraint("context"),
		ExitLoop("send_message"),
		ContinueLoop("search"),
		MaxCalls("api_request", 3),
		MaxCalls("never", 0),
		RequiresPrior("write", "read", "plan"),
		RequiresFollowing("plan", "execute"),
		RequiredBeforeExit("save"),
		ExclusiveGroup("a", "b", "c"),
		Cooldown("web", 30*time.Second),
		Cooldown("tiny", 1500*time.Microsecond),
		RequiresConsent("delete_file"),
	}
}

func TestRuleJSONRoundTrip(t *testing.T) {
	rules := allKinds()
	data, err := json.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	var back []Rule
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rules) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", back, rules)
	}
	for _, c := range []struct {
		r    Rule
		want string
	}{
		{MaxCalls("api_request", 3), `{"kind":"max_calls","tool":"api_request","n":3}`},
		{MaxCalls("x", 0), `{"kind":"max_calls","tool":"x","n":0}`},
		{Cooldown("web", 30*time.Second), `{"kind":"cooldown","tool":"web","duration":"30s"}`},
		{ExclusiveGroup("a", "b"), `{"kind":"exclusive_group","tools":["a","b"]}`},
		{RequiresPrior("w", "r"), `{"kind":"requires_prior","tool":"w","tools":["r"]}`},
	} {
		got, err := json.Marshal(c.r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("Marshal = %s, want %s", got, c.want)
		}
	}
}

func TestRuleUnmarshal(t *testing.T) {
	var r Rule
	if err := json.Unmarshal([]byte(`{"kind":"cooldown","tool":"web","duration":30000000000}`), &r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, Cooldown("web", 30*time.Second)) {
		t.Fatalf("numeric duration: %#v", r)
	}
	if err := json.Unmarshal([]byte(`{"kind":"teleport","tool":"x"}`), &r); !errors.Is(err, ErrInvalidRules) {
		t.Fatalf("unknown kind: err = %v", err)
	}
	for _, bad := range []string{
		`{"kind":"cooldown","tool":"web","duration":"soon"}`,
		`{"kind":"cooldown","tool":"web","duration":true}`,
		`{"kind":"max_calls","tool":"x","n":"three"}`,
		`[1]`,
	} {
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
