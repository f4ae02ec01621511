package deploy

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines is the most lines a non-test Go file of the repository may
// have: past it a file holds more than one concern and is split.
const maxFileLines = 400

// trackedFiles lists the repository's files as git tracks them, or every
// file below the repository's root when git (or its metadata) is absent.
func trackedFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", "..", "ls-files", "-z").Output()
	if err == nil && len(out) > 0 {
		var files []string
		for _, f := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
			files = append(files, filepath.Join("..", string(f)))
		}
		return files
	}
	var files []string
	filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	return files
}

// TestNoGoFileOverMaxLines: no non-test Go file passes maxFileLines.
func TestNoGoFileOverMaxLines(t *testing.T) {
	n := 0
	for _, f := range trackedFiles(t) {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue // listed by git but deleted in the work tree
		}
		n++
		if lines := bytes.Count(data, []byte{'\n'}); lines > maxFileLines {
			t.Errorf("%s: %d lines (at most %d: split it by concern)", f, lines, maxFileLines)
		}
	}
	if n < 50 {
		t.Fatalf("found only %d Go files", n)
	}
}

// TestNoFileSpeaksOfWorkStretches: no file of the repository names the
// stretches of work that built it (the word is spelled in two halves so
// that this file does not say it); that history lives in git.
func TestNoFileSpeaksOfWorkStretches(t *testing.T) {
	word := []byte("sess" + "ion")
	for _, f := range trackedFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			continue // deleted, or binary
		}
		if !bytes.Contains(bytes.ToLower(data), word) {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
		for line := 1; sc.Scan(); line++ {
			if bytes.Contains(bytes.ToLower(sc.Bytes()), word) {
				t.Errorf("%s:%d: %s", f, line, strings.TrimSpace(sc.Text()))
				break
			}
		}
	}
}
