package searchindex

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/engram-go/engram/internal/vecmath"
	"github.com/engram-go/engram/search"
)

// scanDistances is the exact-distance fallback for a dialect without a
// distance in SQL (driver.Vectors.Distance): q selects the result columns and
// then the row's embedding; the cosine distances are computed here,
// nearest first.
func (x *Index) scanDistances(ctx context.Context, k *kind, qvec []byte, q string, args []any, limit int) ([]*hit, error) {
	qv, err := vecmath.FromBlob(qvec)
	if err != nil {
		return nil, err
	}
	if math.IsNaN(search.CosineDistance(qv, qv)) {
		return nil, nil // a zero query vector has no distance to anything
	}
	rows, err := x.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search: vector %s: %w", k.name, err)
	}
	defer rows.Close()
	var out []*hit
	for rows.Next() {
		var blob []byte
		r, err := scanResult(rows, k, &blob)
		if err != nil {
			return nil, fmt.Errorf("search: vector %s: %w", k.name, err)
		}
		v, err := vecmath.FromBlob(blob)
		if err != nil {
			// A torn row is reported, never skipped.
			return nil, fmt.Errorf("search: vector %s row %d: %w", k.name, r.ID, err)
		}
		d := search.CosineDistance(qv, v)
		if math.IsNaN(d) {
			continue // another embedder's dimension (Reembed replaces it) or a zero vector (no distance)
		}
		r.Source.Distance = d
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: vector %s: %w", k.name, err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Source.Distance != out[j].Source.Distance {
			return out[i].Source.Distance < out[j].Source.Distance
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// VectorEngine names what answers vector searches: "in-process" (the
// vector cache: the default where the database's KNN is an exact scan, on
// request elsewhere, and the only KNN where the database has none; the
// database answers while it loads), the database's KNN
// (driver.VectorInfo.Engine: "sqlite-vec", an exact scan with sqlite-vec's
// vec_distance_cosine; "pgvector", PostgreSQL's vector extension, HNSW),
// or "" without an embedder.
func (x *Index) VectorEngine() string {
	switch {
	case x.emb == nil:
		return ""
	case x.cache != nil && !x.cache.dropped():
		return "in-process"
	default:
		return x.vinfo.Engine
	}
}

// VectorEngineReason says why the Index does not use the database's
// indexed KNN (for pgvector: the error creating the extension, its
// version, or VectorCacheBytes); "" when it does, or the database has none
// (an exact scan).
func (x *Index) VectorEngineReason() string { return x.vecReason }
