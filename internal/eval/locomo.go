package eval

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LoCoMo is the development half of LoCoMo (../shared/datasets/locomo-dev,
// see its README): long two-person conversations and questions whose
// answers are in named dialogue turns.
type LoCoMo struct {
	Conversations []LoCoMoConversation
	// Malformed counts evidence ids naming no turn of their conversation
	// (skipped); NoEvidence counts questions left with none (dropped).
	Malformed, NoEvidence int
}

// LoCoMoConversation is one conversation: its sessions in order, and the
// questions about it that have evidence.
type LoCoMoConversation struct {
	ID        string
	Sessions  []LoCoMoSession
	Questions []LoCoMoQuestion
}

// LoCoMoSession is one session: its key ("session_3"), date as written
// ("1:56 pm on 8 May, 2023") and as a time (UTC; zero if it does not
// parse), and turns.
type LoCoMoSession struct {
	Key, Date string
	Time      time.Time
	Turns     []LoCoMoTurn
}

// LoCoMoTurn is one dialogue turn; Text is what engram's tests store:
// "Speaker: text", plus " [image: caption]" for a shared image.
type LoCoMoTurn struct {
	DiaID, Speaker, Text string
}

// LoCoMoQuestion is a question, its category (LoCoMoCategories) and the
// dia ids of its evidence turns.
type LoCoMoQuestion struct {
	Question string
	Category int
	Evidence map[string]bool
}

// LoCoMoCategories names the question categories.
var LoCoMoCategories = map[int]string{1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

// FindLoCoMo returns the path of locomo-dev.json: $ENGRAM_LOCOMO (the
// file or its directory) if set, else shared/datasets/locomo-dev beside
// (or inside) the working directory or any of its parents; "" if absent.
func FindLoCoMo() string {
	if p := os.Getenv("ENGRAM_LOCOMO"); p != "" {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			p = filepath.Join(p, "locomo-dev.json")
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return ""
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		for _, p := range []string{
			filepath.Join(dir, "..", "shared", "datasets", "locomo-dev", "locomo-dev.json"),
			filepath.Join(dir, "shared", "datasets", "locomo-dev", "locomo-dev.json"),
		} {
			if _, err := os.Stat(p); err == nil {
				return filepath.Clean(p)
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// LoadLoCoMo reads locomo-dev.json. Evidence strings holding several ids
// ("D8:6; D9:17") are split; ids naming no turn are counted in Malformed.
func LoadLoCoMo(path string) (*LoCoMo, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var samples []struct {
		SampleID     string                     `json:"sample_id"`
		Conversation map[string]json.RawMessage `json:"conversation"`
		QA           []struct {
			Question string   `json:"question"`
			Evidence []string `json:"evidence"`
			Category int      `json:"category"`
		} `json:"qa"`
	}
	if err := json.Unmarshal(raw, &samples); err != nil {
		return nil, fmt.Errorf("locomo: parse %s: %w", path, err)
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("locomo: %s holds no conversations", path)
	}
	out := &LoCoMo{}
	for _, s := range samples {
		c := LoCoMoConversation{ID: s.SampleID}
		known := map[string]bool{}
		for _, key := range sessionKeys(s.Conversation) {
			var ts []struct {
				Speaker     string `json:"speaker"`
				DiaID       string `json:"dia_id"`
				Text        string `json:"text"`
				BlipCaption string `json:"blip_caption"`
			}
			if err := json.Unmarshal(s.Conversation[key], &ts); err != nil {
				return nil, fmt.Errorf("locomo: %s %s: %w", s.SampleID, key, err)
			}
			if len(ts) == 0 {
				continue
			}
			sess := LoCoMoSession{Key: key}
			_ = json.Unmarshal(s.Conversation[key+"_date_time"], &sess.Date)
			for _, layout := range []string{"3:04 pm on 2 January, 2006", "3 pm on 2 January, 2006"} {
				if tm, err := time.Parse(layout, sess.Date); err == nil {
					sess.Time = tm
					break
				}
			}
			for _, t := range ts {
				text := t.Speaker + ": " + t.Text
				if t.BlipCaption != "" {
					text += " [image: " + t.BlipCaption + "]"
				}
				sess.Turns = append(sess.Turns, LoCoMoTurn{DiaID: t.DiaID, Speaker: t.Speaker, Text: text})
				known[t.DiaID] = true
			}
			c.Sessions = append(c.Sessions, sess)
		}
		for _, q := range s.QA {
			want := map[string]bool{}
			for _, ev := range q.Evidence {
				for _, id := range strings.FieldsFunc(ev, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
					if known[id] {
						want[id] = true
					} else {
						out.Malformed++
					}
				}
			}
			if len(want) == 0 {
				if len(q.Evidence) > 0 {
					out.NoEvidence++
				}
				continue
			}
			c.Questions = append(c.Questions, LoCoMoQuestion{Question: q.Question, Category: q.Category, Evidence: want})
		}
		out.Conversations = append(out.Conversations, c)
	}
	return out, nil
}

// sessionKeys returns a conversation's session keys in session order.
func sessionKeys(conv map[string]json.RawMessage) []string {
	var keys []string
	for k := range conv {
		if n, ok := strings.CutPrefix(k, "session_"); ok {
			if _, err := strconv.Atoi(n); err == nil {
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimPrefix(keys[i], "session_"))
		b, _ := strconv.Atoi(strings.TrimPrefix(keys[j], "session_"))
		return a < b
	})
	return keys
}

// EvidenceRecall is the share of want among the first k of ranked.
func EvidenceRecall(ranked []string, want map[string]bool, k int) float64 {
	if len(want) == 0 {
		return 0
	}
	hit := 0
	for i := 0; i < k && i < len(ranked); i++ {
		if want[ranked[i]] {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}
