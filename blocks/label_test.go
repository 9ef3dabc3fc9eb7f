package blocks_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
)

func TestCheckLabel(t *testing.T) {
	tests := []struct {
		label string
		ok    bool
	}{
		{"persona", true},
		{"skill.deploy", true},
		{"task_list-2", true},
		{"_private", true},
		{"A1", true},
		{strings.Repeat("x", blocks.MaxLabelLen), true},
		{"", false},
		{strings.Repeat("x", blocks.MaxLabelLen+1), false},
		{"skill:x", false},
		{"my notes", false},
		{"tab\there", false},
		{"日本語", false},
		{"emoji🙂", false},
		{"-dash", false},
		{".dot", false},
		{"a/b", false},
		{"a%20b", false},
		{"nul\x00", false},
	}
	for _, tc := range tests {
		err := blocks.CheckLabel(tc.label)
		if (err == nil) != tc.ok {
			t.Errorf("CheckLabel(%q) = %v, want ok=%v", tc.label, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, blocks.ErrInvalidLabel) || !strings.Contains(err.Error(), "ASCII letters")) {
			t.Errorf("CheckLabel(%q): error %v does not wrap ErrInvalidLabel and state the rule", tc.label, err)
		}
	}
}

func TestSuggestLabel(t *testing.T) {
	for in, want := range map[string]string{
		"deploy":                 "deploy",
		"skill.my tool":          "skill.my_tool",
		"skill:x":                "skill_x",
		"日本語":                    "_",
		"-x":                     "_x",
		"":                       "_",
		strings.Repeat("ab", 50): strings.Repeat("ab", 32),
	} {
		got := blocks.SuggestLabel(in)
		if got != want {
			t.Errorf("SuggestLabel(%q) = %q, want %q", in, got, want)
		}
		if err := blocks.CheckLabel(got); err != nil {
			t.Errorf("SuggestLabel(%q) = %q is not valid: %v", in, got, err)
		}
	}
}

// The tag name of a label is one-to-one and LabelFromTag inverts it: two
// stored labels never share a tag name, and the name a model reads leads
// back to the block.
func TestTagLabelCollisions(t *testing.T) {
	labels := []string{"skill:x", "skill_x", "日本語", "中文字", "a b", "a_b", "a%20b", "", "%", "-x", "_x", "persona"}
	seen := map[string]string{}
	for _, l := range labels {
		tag := blocks.TagLabel(l)
		if other, dup := seen[tag]; dup {
			t.Errorf("labels %q and %q share tag name %q", other, l, tag)
		}
		seen[tag] = l
		if back := blocks.LabelFromTag(tag); back != l {
			t.Errorf("LabelFromTag(TagLabel(%q) = %q) = %q", l, tag, back)
		}
		if err := blocks.CheckLabel(l); err == nil && tag != l {
			t.Errorf("valid label %q has tag name %q", l, tag)
		}
	}
}

func FuzzTagLabel(f *testing.F) {
	for _, s := range []string{"skill:x", "日本語", "a%41", "%", "", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, l string) {
		tag := blocks.TagLabel(l)
		if back := blocks.LabelFromTag(tag); back != l {
			t.Fatalf("LabelFromTag(TagLabel(%q) = %q) = %q", l, tag, back)
		}
		for i := 0; i < len(tag); i++ {
			c := tag[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-.%", c) >= 0) {
				t.Fatalf("TagLabel(%q) = %q holds %q", l, tag, c)
			}
		}
	})
}
