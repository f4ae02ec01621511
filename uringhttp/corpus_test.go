package uringhttp_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The public HTTP/1.1 request corpora in testdata/corpora (their README
// names the sources and licences): every case goes, raw, to net/http and
// to uringhttp serving the differential handler, followed by the client's
// half-close (so that each server ends the exchange itself, at once), and
// the bytes back must match once Date is set aside, and so must how the
// connection ended.

// corpusCase is one line of a corpus file: ID, source, note, request.
type corpusCase struct {
	id, source, note string
	req              string
}

// loadCorpora reads every case of testdata/corpora/*.txt.
func loadCorpora(t *testing.T) []corpusCase {
	files, err := filepath.Glob("testdata/corpora/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files in testdata/corpora: %v", err)
	}
	var cases []corpusCase
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for ln := 1; sc.Scan(); ln++ {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			f := strings.Split(line, "\t")
			if len(f) != 4 {
				t.Fatalf("%s:%d: %d fields, want 4 (ID, source, note, request)", filepath.Base(f[0]), ln, len(f))
			}
			req, err := unquoteCorpus(f[3])
			if err != nil {
				t.Fatalf("%s: %v", f[0], err)
			}
			if seen[f[0]] {
				t.Fatalf("case %s twice", f[0])
			}
			seen[f[0]] = true
			cases = append(cases, corpusCase{id: f[0], source: f[1], note: f[2], req: req})
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return cases
}

// unquoteCorpus decodes a corpus request: Go string literals separated
// by spaces, joined, each optionally repeated ("x"*1024).
func unquoteCorpus(v string) (string, error) {
	var b strings.Builder
	for v != "" {
		q, err := strconv.QuotedPrefix(v)
		if err != nil {
			return "", fmt.Errorf("request not Go string literals: %v at %.40q", err, v)
		}
		part, _ := strconv.Unquote(q)
		v = v[len(q):]
		n := 1
		if rest, ok := strings.CutPrefix(v, "*"); ok {
			i := 0
			for i < len(rest) && '0' <= rest[i] && rest[i] <= '9' {
				i++
			}
			if n, err = strconv.Atoi(rest[:i]); err != nil {
				return "", fmt.Errorf("bad repeat count at %.40q", v)
			}
			v = rest[i:]
		}
		b.WriteString(strings.Repeat(part, n))
		v = strings.TrimLeft(v, " ")
	}
	return b.String(), nil
}

// TestDifferentialCorpora runs every corpus case against both servers,
// 16 at a time. Before the Expect, trailer and cut-body fixes, 5 of the
// 3,831 differed: an Expect of "x 100-continue" (417 against net/http's
// 100 Continue), chunked bodies whose trailer the FIN or a bare LF cut
// (nil or a bare "unexpected EOF" against net/http's trailer errors), and
// a Content-Length body cut 256 KiB or more short (no Connection: close).
func TestDifferentialCorpora(t *testing.T) {
	cases := loadCorpora(t)
	if len(cases) < 3800 {
		t.Fatalf("%d corpus cases, want the 3,831 of testdata/corpora", len(cases))
	}
	s := startDiffServers(t, diffHandler(), 0)
	defer s.stop()
	dcs := make([]diffCase, len(cases))
	for i, c := range cases {
		dcs[i] = diffCase{name: c.id, steps: []rawStep{{send: c.req}, {closeWrite: true}}}
	}
	results := exchangeAll(s, s, dcs, 16)
	var differ []string
	for i, c := range cases {
		r := results[i]
		if r.err != nil {
			t.Errorf("%s: %v", c.id, r.err)
			continue
		}
		a, b := normalize(r.std.out), normalize(r.ur.out)
		if !bytes.Equal(a, b) || r.std.closed() != r.ur.closed() {
			differ = append(differ, c.id)
			t.Errorf("%s (%s; %s): %q\nbytes differ at %d, connection net/http %s, uringhttp %s\n net/http  (%d bytes): %s\n uringhttp (%d bytes): %s",
				c.id, c.source, c.note, c.req, firstDiff(a, b), r.std.end, r.ur.end, len(a), clip(a), len(b), clip(b))
		}
	}
	sort.Strings(differ)
	if len(differ) > 0 {
		t.Logf("%d of %d cases differ: %s", len(differ), len(cases), strings.Join(differ, " "))
	}
}
