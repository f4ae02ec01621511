// Command layerrefs counts the references inside package runtime that run
// from its lower concerns (the loop, ops, socket state) up to its higher
// ones (the callback API, listeners): uses, in one file, of a
// package-level identifier, method or struct field declared in another.
//
//	go run ./scripts/layerrefs [-v] [dir]   (dir: runtime by default)
//
// -v lists each reference: from-file to-file identifier uses.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// concerns maps a file name to its concern, first match wins.
var concerns = []struct {
	name string
	re   *regexp.Regexp
}{
	{"callbacks", regexp.MustCompile(`^(callback.*|handler|outq|lend|budget|idle|op_cb.*|op_accept|std_deadline)\.go$`)},
	{"listeners", regexp.MustCompile(`^(listen.*|listener)\.go$`)},
	{"loop", regexp.MustCompile(`^(loop.*|request|curg.*|metrics|bufring)\.go$`)},
	{"ops", regexp.MustCompile(`^(op|op_wake|op_poll|op_rw|close)\.go$`)},
	{"state", regexp.MustCompile(`^(netfd|polldesc.*|park|deadline|pdcommit.*|gopoll|rawconn|pollable.*)\.go$`)},
}

var lower = map[string]bool{"loop": true, "ops": true, "state": true}
var higher = map[string]bool{"callbacks": true, "listeners": true}

func concern(file string) string {
	for _, c := range concerns {
		if c.re.MatchString(file) {
			return c.name
		}
	}
	return "other"
}

type listed struct {
	Dir, ImportPath, Export string
	GoFiles                 []string
}

func main() {
	verbose := flag.Bool("v", false, "list each reference")
	flag.Parse()
	dir := "runtime"
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=Dir,ImportPath,Export,GoFiles", ".")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		log.Fatal(err)
	}
	exports := map[string]string{}
	var self listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			log.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		self = p // -deps lists the package itself last
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, f := range self.GoFiles {
		af, err := parser.ParseFile(fset, filepath.Join(self.Dir, f), nil, 0)
		if err != nil {
			log.Fatal(err)
		}
		files = append(files, af)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: imp}).Check(self.ImportPath, fset, files, info)
	if err != nil {
		log.Fatal(err)
	}
	type ref struct{ from, to, name string }
	uses := map[ref]int{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		name := obj.Name()
		switch o := obj.(type) {
		case *types.Var:
			if o.IsField() {
				name = "." + name
			} else if o.Parent() != pkg.Scope() {
				continue // a local
			}
		case *types.Func:
			if r := o.Type().(*types.Signature).Recv(); r != nil {
				name = strings.TrimPrefix(types.TypeString(r.Type(), types.RelativeTo(pkg)), "*") + "." + name
			}
		case *types.TypeName, *types.Const:
			if o.Parent() != pkg.Scope() {
				continue
			}
		default:
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from != to && lower[concern(from)] && higher[concern(to)] {
			uses[ref{from, to, name}]++
		}
	}
	refs := make([]ref, 0, len(uses))
	total := 0
	fromFiles := map[string]bool{}
	for r, n := range uses {
		refs = append(refs, r)
		total += n
		fromFiles[r.from] = true
	}
	sort.Slice(refs, func(i, j int) bool {
		a, b := refs[i], refs[j]
		if a.from != b.from {
			return a.from < b.from
		}
		if a.to != b.to {
			return a.to < b.to
		}
		return a.name < b.name
	})
	if *verbose {
		for _, r := range refs {
			fmt.Println(r.from, r.to, r.name, uses[r])
		}
	}
	fmt.Printf("lower->higher: %d distinct (file, identifier) references, %d uses, from %d files\n", len(refs), total, len(fromFiles))
}
