package accesstoken_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Package memory's API holds none of serve's credentials: no exported
// name of it, and no method of its Store, is a token or a login link.
// The source is parsed whatever its build constraints, so a file kept
// out of the build still counts.
func TestMemoryAPIHoldsNoCredentials(t *testing.T) {
	dir := filepath.Join("..", "..", "memory")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name.Name == "memory" {
				files = append(files, f)
			}
		}
	}
	if len(files) < 10 {
		t.Fatalf("parsed %d files of package memory in %s", len(files), dir)
	}
	credential := regexp.MustCompile(`(?i)accesstoken|loginlink|^tokens$|^tokenspec$|^tokenprefix$|^errtoken`)
	var found []string
	check := func(name, where string) {
		if ast.IsExported(name) && credential.MatchString(name) {
			found = append(found, where+name)
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					check(d.Name.Name, "")
				} else if recv := recvName(d.Recv.List[0].Type); ast.IsExported(recv) {
					check(d.Name.Name, recv+".")
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						check(s.Name.Name, "")
					case *ast.ValueSpec:
						for _, n := range s.Names {
							check(n.Name, "")
						}
					}
				}
			}
		}
	}
	if len(found) > 0 {
		t.Errorf("package memory exports serve's credentials (they belong in internal/accesstoken): %s", strings.Join(found, ", "))
	}
}

func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
