package eval

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// maxDimensions bounds a vector file's dimension against a corrupt
// header. It is search.MaxDimensions, copied: the in-package tests of
// internal/analyzer, which search imports, import this package, so it
// cannot import search.
const maxDimensions = 8192

// Cranfield is the Cranfield test collection (1,400 aeronautics abstracts,
// 225 queries, graded judgements) as shipped beside the project in
// shared/datasets/cranfield, for quality tests and benchmarks.
type Cranfield struct {
	Docs    []CranfieldDoc
	Queries []CranfieldQuery
	// Qrels maps query id to document id to grade (5 - position: 4 for a
	// complete answer down to 1 for minimal interest).
	Qrels map[string]Relevance
	// DocVectors and QueryVectors are the shipped 512-dimension sentence
	// embeddings (nil if the .f32 files are absent), keyed by id.
	DocVectors   map[int64][]float32
	QueryVectors map[int64][]float32
}

// CranfieldDoc is one abstract. Body starts with the title.
type CranfieldDoc struct {
	ID                          int64
	Title, Author, Bibliography string
	Body                        string
}

// CranfieldQuery is one query.
type CranfieldQuery struct {
	ID   int64
	Text string
}

// FindCranfield locates the collection: $ENGRAM_CRANFIELD if set, else
// shared/datasets/cranfield beside (or inside) the working directory or any
// of its parents. It returns "" when there is none.
func FindCranfield() string {
	if p := os.Getenv("ENGRAM_CRANFIELD"); p != "" {
		if isCranfield(p) {
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
			filepath.Join(dir, "..", "shared", "datasets", "cranfield"),
			filepath.Join(dir, "shared", "datasets", "cranfield"),
		} {
			if isCranfield(p) {
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

func isCranfield(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cran_docs.json"))
	return err == nil
}

// flexID accepts a JSON number or a string holding one.
type flexID int64

func (f *flexID) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("id %q: %w", s, err)
		}
		*f = flexID(n)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*f = flexID(n)
	return nil
}

// LoadCranfield reads the collection from dir.
func LoadCranfield(dir string) (*Cranfield, error) {
	var docs []struct {
		ID           flexID `json:"id"`
		Title        string `json:"title"`
		Author       string `json:"author"`
		Bibliography string `json:"bibliography"`
		Body         string `json:"body"`
	}
	var queries []struct {
		ID   flexID `json:"query number"`
		Text string `json:"query"`
	}
	var qrels []struct {
		Query    flexID `json:"query_num"`
		Position int    `json:"position"`
		Doc      flexID `json:"id"`
	}
	for name, v := range map[string]any{"cran_docs.json": &docs, "cran_queries.json": &queries, "cran_qrels.json": &qrels} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("cranfield: %w", err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			return nil, fmt.Errorf("cranfield: %s: %w", name, err)
		}
	}
	c := &Cranfield{Qrels: map[string]Relevance{}}
	for _, d := range docs {
		c.Docs = append(c.Docs, CranfieldDoc{ID: int64(d.ID), Title: d.Title, Author: d.Author, Bibliography: d.Bibliography, Body: d.Body})
	}
	for _, q := range queries {
		c.Queries = append(c.Queries, CranfieldQuery{ID: int64(q.ID), Text: q.Text})
	}
	for _, r := range qrels {
		gain := float64(5 - r.Position)
		if gain <= 0 {
			continue
		}
		q := strconv.FormatInt(int64(r.Query), 10)
		if c.Qrels[q] == nil {
			c.Qrels[q] = Relevance{}
		}
		c.Qrels[q][strconv.FormatInt(int64(r.Doc), 10)] = gain
	}
	var err error
	if c.DocVectors, err = readF32(filepath.Join(dir, "use_docs.f32")); err != nil {
		return nil, err
	}
	if c.QueryVectors, err = readF32(filepath.Join(dir, "use_queries.f32")); err != nil {
		return nil, err
	}
	return c, nil
}

// readF32 reads uint32 n, uint32 dim, then n rows of (uint32 id, dim
// float32), all little-endian. A missing file gives nil.
func readF32(path string) (map[int64][]float32, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cranfield: %w", err)
	}
	defer f.Close()
	var hdr [2]uint32
	if err := binary.Read(f, binary.LittleEndian, &hdr); err != nil {
		return nil, fmt.Errorf("cranfield: %s header: %w", path, err)
	}
	n, dim := int(hdr[0]), int(hdr[1])
	if dim <= 0 || dim > maxDimensions {
		return nil, fmt.Errorf("cranfield: %s: bad dimension %d", path, dim)
	}
	out := make(map[int64][]float32, n)
	row := make([]byte, 4+4*dim)
	for i := 0; i < n; i++ {
		if _, err := io.ReadFull(f, row); err != nil {
			return nil, fmt.Errorf("cranfield: %s row %d: %w", path, i, err)
		}
		id := int64(binary.LittleEndian.Uint32(row))
		v := make([]float32, dim)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(row[4+4*j:]))
		}
		out[id] = v
	}
	return out, nil
}
