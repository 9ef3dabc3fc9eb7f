package ui

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/url"
	"path"
	"strings"
	"time"
)

// funcMap is the templates' functions for an app mounted at base (see
// Options.BasePath): links are made with blockURL, agentURL and path.
func funcMap(base string) template.FuncMap {
	return template.FuncMap{
		"blockURL": func(owner, label string) string { return blockURL(base, owner, label) },
		"agentURL": func(a string) string { return base + "/agents/" + url.PathEscape(a) },
		"path":     func(p string) string { return base + p },
		"time":     fmtTime,
		"dur":      func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() },
		"plural":   plural,
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
		"pct": percent,
		"proposalArgs": func(p proposalRow, csrf, ret string) proposalArgs {
			return proposalArgs{P: p, CSRF: csrf, Return: ret}
		},
		"join":  strings.Join,
		"list3": func(a, b, c string) []string { return []string{a, b, c} },
		"add":   func(a, b int) int { return a + b },
		"num": func(n int) string {
			s := fmt.Sprint(n)
			for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
				s = s[:i] + "," + s[i:]
			}
			return s
		},
	}
}

// parsePages parses each page template together with the layout, for an
// app mounted at basePath.
func parsePages(basePath string) (map[string]*template.Template, error) {
	base, err := template.New("layout").Funcs(funcMap(basePath)).ParseFS(assets, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("ui: parse layout: %w", err)
	}
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: list templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(assets, n)
		if err != nil {
			return nil, fmt.Errorf("ui: parse %s: %w", n, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// proposalArgs is what the "proposal" partial gets: a proposal, the CSRF
// token and where to return after deciding.
type proposalArgs struct {
	P      proposalRow
	CSRF   string
	Return string
}
