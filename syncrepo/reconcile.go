package syncrepo

import (
	"bytes"
	"fmt"
	"time"

	"github.com/automerge/automerge-go"
)

// reconcile changes dst, with automerge operations, until its value is
// src's: the counter-change that takes a refused edit back on a peer that
// already applied it (automerge changes cannot be withdrawn, only
// overridden by later ones). Texts are spliced where they differ, lists
// trimmed to their common ends, so concurrent edits elsewhere survive.
//
// overrides reports whether it had to write a value over the refused one
// (a scalar set back, or a copy of an object the refused edit replaced or
// deleted) rather than only remove what the edit added: such a write
// conflicts with, or orphans, store edits made after it (see
// session.absorb).
func reconcile(dst, src *automerge.Doc) (overrides bool, err error) {
	err = reconcileMap(dst.RootMap(), src.RootMap(), &overrides)
	return overrides, err
}

func reconcileMap(dm, sm *automerge.Map, ov *bool) error {
	dv, err := dm.Values()
	if err != nil {
		return err
	}
	sv, err := sm.Values()
	if err != nil {
		return err
	}
	for k := range dv {
		if _, ok := sv[k]; !ok {
			if err := dm.Delete(k); err != nil {
				return err
			}
		}
	}
	for k, s := range sv {
		d, ok := dv[k]
		if ok {
			same, err := reconcileIn(d, s, ov)
			if err != nil {
				return err
			}
			if same {
				continue
			}
		}
		*ov = true
		if err := setCopy(func(v any) error { return dm.Set(k, v) }, s); err != nil {
			return err
		}
	}
	return nil
}

// reconcileIn brings d to s in place when both are the same kind of
// object or equal scalars, and reports whether it did; otherwise the
// caller replaces d with a copy of s.
func reconcileIn(d, s *automerge.Value, ov *bool) (bool, error) {
	if d.Kind() != s.Kind() {
		return false, nil
	}
	switch s.Kind() {
	case automerge.KindMap:
		return true, reconcileMap(d.Map(), s.Map(), ov)
	case automerge.KindList:
		return true, reconcileList(d.List(), s.List(), ov)
	case automerge.KindText:
		return true, reconcileText(d.Text(), s.Text())
	case automerge.KindCounter:
		dc, err := d.Counter().Get()
		if err != nil {
			return false, err
		}
		sc, err := s.Counter().Get()
		if err != nil {
			return false, err
		}
		if dc != sc {
			return true, d.Counter().Inc(sc - dc)
		}
		return true, nil
	case automerge.KindBytes:
		return bytes.Equal(d.Bytes(), s.Bytes()), nil
	case automerge.KindTime:
		return d.Time().Equal(s.Time()), nil
	case automerge.KindNull, automerge.KindVoid:
		return true, nil
	default:
		return d.Interface() == s.Interface(), nil
	}
}

func reconcileText(d, s *automerge.Text) error {
	dt, err := d.Get()
	if err != nil {
		return err
	}
	st, err := s.Get()
	if err != nil {
		return err
	}
	if dt == st {
		return nil
	}
	// automerge-go counts text positions in code points (as package
	// blocks does).
	du, su := []rune(dt), []rune(st)
	pre := 0
	for pre < len(du) && pre < len(su) && du[pre] == su[pre] {
		pre++
	}
	suf := 0
	for suf < len(du)-pre && suf < len(su)-pre && du[len(du)-1-suf] == su[len(su)-1-suf] {
		suf++
	}
	ins := string(su[pre : len(su)-suf])
	return d.Splice(pre, len(du)-pre-suf, ins)
}

func reconcileList(d, s *automerge.List, ov *bool) error {
	dv, err := d.Values()
	if err != nil {
		return err
	}
	sv, err := s.Values()
	if err != nil {
		return err
	}
	pre := 0
	for pre < len(dv) && pre < len(sv) && sameValue(dv[pre], sv[pre]) {
		pre++
	}
	suf := 0
	for suf < len(dv)-pre && suf < len(sv)-pre && sameValue(dv[len(dv)-1-suf], sv[len(sv)-1-suf]) {
		suf++
	}
	// Positions that both sides have in the middle are brought in place
	// (an edited item keeps its identity); the rest are deleted or
	// inserted.
	dm, sm := dv[pre:len(dv)-suf], sv[pre:len(sv)-suf]
	n := min(len(dm), len(sm))
	for i := 0; i < n; i++ {
		same, err := reconcileIn(dm[i], sm[i], ov)
		if err != nil {
			return err
		}
		if !same {
			*ov = true
			if err := setCopy(func(v any) error { return d.Set(pre+i, v) }, sm[i]); err != nil {
				return err
			}
		}
	}
	for i := len(dm) - 1; i >= n; i-- {
		if err := d.Delete(pre + i); err != nil {
			return err
		}
	}
	for i := n; i < len(sm); i++ {
		*ov = true
		if err := setCopy(func(v any) error { return d.Insert(pre+i, v) }, sm[i]); err != nil {
			return err
		}
	}
	return nil
}

// sameValue reports whether two values are equal (deeply).
func sameValue(a, b *automerge.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case automerge.KindBytes:
		return bytes.Equal(a.Bytes(), b.Bytes())
	case automerge.KindTime:
		return a.Time().Equal(b.Time())
	case automerge.KindMap, automerge.KindList:
		return fmt.Sprint(a.Interface()) == fmt.Sprint(b.Interface())
	}
	return a.Interface() == b.Interface()
}

// setCopy writes a copy of s through put (a map key's Set, a list's Set
// or Insert), keeping each object's kind: a text stays a text, a counter
// a counter.
func setCopy(put func(any) error, s *automerge.Value) error {
	switch s.Kind() {
	case automerge.KindMap:
		m := automerge.NewMap()
		if err := put(m); err != nil {
			return err
		}
		vals, err := s.Map().Values()
		if err != nil {
			return err
		}
		for k, v := range vals {
			if err := setCopy(func(x any) error { return m.Set(k, x) }, v); err != nil {
				return err
			}
		}
		return nil
	case automerge.KindList:
		l := automerge.NewList()
		if err := put(l); err != nil {
			return err
		}
		vals, err := s.List().Values()
		if err != nil {
			return err
		}
		for i, v := range vals {
			if err := setCopy(func(x any) error { return l.Insert(i, x) }, v); err != nil {
				return err
			}
		}
		return nil
	case automerge.KindText:
		t, err := s.Text().Get()
		if err != nil {
			return err
		}
		return put(automerge.NewText(t))
	case automerge.KindCounter:
		c, err := s.Counter().Get()
		if err != nil {
			return err
		}
		return put(automerge.NewCounter(c))
	case automerge.KindTime:
		return put(s.Time().In(time.UTC))
	case automerge.KindNull, automerge.KindVoid:
		return put(nil)
	}
	return put(s.Interface())
}
