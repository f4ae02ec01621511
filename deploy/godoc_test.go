package deploy

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// historyInDocs matches what public docs must not say: where something came
// from rather than what it does (an internal file name, a kernel commit
// hash, the seed experiments, the stretches of work that built it (the word
// is spelled in two halves below so that this file does not say it), the
// benchmark harness's path, a design document outside the repository).
var historyInDocs = regexp.MustCompile(`\b[a-z_0-9]+\.go\b|commit [0-9a-f]{7,}|\b[Ss]eeds?\b|\bsess` + `ions?\b|shared/bench|outside this repository`)

// TestGoDocTellsNoHistory: the go doc of every package of every module of
// the repository (package docs, exported identifiers, exported struct
// fields) matches none of historyInDocs. Before, the runtime's docs named
// callback_stream.go, lend.go, net/dial.go and Linux commit 90fa02883f,
// package experiment the seed experiments, and std-echo ../shared/bench.
func TestGoDocTellsNoHistory(t *testing.T) {
	dirs := map[string]bool{}
	filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	})
	if len(dirs) < 10 {
		t.Fatalf("found only %d package directories", len(dirs))
	}
	for dir := range dirs {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			check := func(what, text string) {
				if m := historyInDocs.FindString(text); m != "" {
					t.Errorf("%s: %s: doc says %q", dir, what, m)
				}
			}
			d := doc.New(pkg, dir, 0)
			check("package doc", d.Doc)
			if pkg.Name == "main" {
				continue // a command's go doc is its package doc
			}
			values := func(vs []*doc.Value) {
				for _, v := range vs {
					check(strings.Join(v.Names, ","), v.Doc)
				}
			}
			values(d.Consts)
			values(d.Vars)
			for _, f := range d.Funcs {
				check(f.Name, f.Doc)
			}
			for _, ty := range d.Types {
				check(ty.Name, ty.Doc)
				values(ty.Consts)
				values(ty.Vars)
				for _, f := range append(ty.Funcs, ty.Methods...) {
					check(ty.Name+"."+f.Name, f.Doc)
				}
				ast.Inspect(ty.Decl, func(n ast.Node) bool {
					if f, ok := n.(*ast.Field); ok && len(f.Names) > 0 && f.Names[0].IsExported() {
						check(ty.Name+"."+f.Names[0].Name, f.Doc.Text()+f.Comment.Text())
					}
					return true
				})
			}
		}
	}
}
