package eval_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/eval"
)

func TestEvidenceRecall(t *testing.T) {
	want := map[string]bool{"D1:1": true, "D2:3": true}
	for _, tc := range []struct {
		ranked []string
		k      int
		r      float64
	}{
		{[]string{"D1:1", "x", "D2:3"}, 2, 0.5},
		{[]string{"D1:1", "x", "D2:3"}, 3, 1},
		{[]string{"x"}, 5, 0},
		{nil, 5, 0},
	} {
		if got := eval.EvidenceRecall(tc.ranked, want, tc.k); got != tc.r {
			t.Errorf("EvidenceRecall(%v, %d) = %v, want %v", tc.ranked, tc.k, got, tc.r)
		}
	}
	if eval.EvidenceRecall([]string{"a"}, nil, 1) != 0 {
		t.Error("no evidence: want 0")
	}
}

func TestLoadLoCoMo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "locomo-dev.json")
	data := `[{"sample_id":"c1","conversation":{"speaker_a":"A","speaker_b":"B",
		"session_2":[{"speaker":"B","dia_id":"D2:1","text":"later"}],"session_2_date_time":"2 pm on 9 May, 2023",
		"session_1":[{"speaker":"A","dia_id":"D1:1","text":"hi","blip_caption":"a cat"},{"speaker":"B","dia_id":"D1:2","text":"hello"}],
		"session_1_date_time":"1 pm on 8 May, 2023"},
		"qa":[{"question":"q1","evidence":["D1:2; D2:1"],"category":4},{"question":"q2","evidence":["D9:9"],"category":1},{"question":"q3","evidence":["D1:1","D"],"category":2}]}]`
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := eval.LoadLoCoMo(p)
	if err != nil {
		t.Fatal(err)
	}
	c := l.Conversations[0]
	if len(c.Sessions) != 2 || c.Sessions[0].Key != "session_1" || c.Sessions[0].Date != "1 pm on 8 May, 2023" ||
		c.Sessions[0].Turns[0].Text != "A: hi [image: a cat]" || c.Sessions[1].Turns[0].DiaID != "D2:1" {
		t.Errorf("sessions %+v", c.Sessions)
	}
	if got, want := c.Sessions[0].Time, time.Date(2023, 5, 8, 13, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("session 1 time %v, want %v", got, want)
	}
	if len(c.Questions) != 2 || len(c.Questions[0].Evidence) != 2 || !c.Questions[1].Evidence["D1:1"] || l.Malformed != 2 || l.NoEvidence != 1 {
		t.Errorf("questions %+v, malformed %d, without evidence %d", c.Questions, l.Malformed, l.NoEvidence)
	}
	if _, err := eval.LoadLoCoMo(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("a missing file loaded")
	}
}
