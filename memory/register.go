package memory

import (
	"slices"
	"strings"
	"sync"

	"github.com/engram-go/engram/driver"
)

// builtinSchemes open SQLite, which is linked into every program.
var builtinSchemes = []string{"sqlite", "file"}

// Register makes a backend available to Open under d's schemes (and
// keyword DSNs if d claims them). name identifies the backend in errors
// and Drivers. Like sql.Register it is meant for init functions and
// panics on a programming error: an empty name, a nil Open, a scheme (or
// the keyword form) registered twice, or a built-in SQLite scheme.
func Register(name string, d driver.Driver) {
	backends.register(name, d)
}

// Drivers returns the names of the registered backends, sorted; SQLite,
// which is built in, is not among them.
func Drivers() []string {
	return backends.names()
}

// backends is the process's registry: the one global Register fills.
var backends registry

// registry maps URL schemes (lower case) to registered drivers.
type registry struct {
	mu      sync.RWMutex
	schemes map[string]registered
	keyword *registered // the driver claiming keyword DSNs
}

type registered struct {
	name string
	d    driver.Driver
}

func (r *registry) register(name string, d driver.Driver) {
	if name == "" || d.Open == nil {
		panic("memory: Register: a backend needs a name and an Open function")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.schemes == nil {
		r.schemes = map[string]registered{}
	}
	for _, s := range d.Schemes {
		s = strings.ToLower(s)
		if slices.Contains(builtinSchemes, s) {
			panic("memory: Register " + name + ": scheme " + s + " is SQLite's, which is built in")
		}
		if prev, dup := r.schemes[s]; dup {
			panic("memory: Register " + name + ": scheme " + s + " is already registered by " + prev.name)
		}
	}
	if d.KeywordDSN && r.keyword != nil {
		panic("memory: Register " + name + ": keyword DSNs are already claimed by " + r.keyword.name)
	}
	for _, s := range d.Schemes {
		r.schemes[strings.ToLower(s)] = registered{name, d}
	}
	if d.KeywordDSN {
		r.keyword = &registered{name, d}
	}
}

// lookup returns the driver for a scheme, or for keyword DSNs when scheme
// is "".
func (r *registry) lookup(scheme string) (registered, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if scheme == "" {
		if r.keyword == nil {
			return registered{}, false
		}
		return *r.keyword, true
	}
	d, ok := r.schemes[scheme]
	return d, ok
}

func (r *registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, d := range r.schemes {
		if !slices.Contains(out, d.name) {
			out = append(out, d.name)
		}
	}
	if r.keyword != nil && !slices.Contains(out, r.keyword.name) {
		out = append(out, r.keyword.name)
	}
	slices.Sort(out)
	return out
}

// importFor names the package that registers a scheme engram ships ("" is
// the keyword form), for the "forgotten import?" error.
func importFor(scheme string) string {
	switch scheme {
	case "postgres", "postgresql", "":
		return "github.com/engram-go/engram/memory/postgres"
	}
	return ""
}
