package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestGoDirectivesAskNoPatchRelease: every module of the repository asks
// for a Go release line (go 1.N.0), not a patch release of it, and names no
// toolchain: a go directive is a minimum that every module importing it
// inherits, and `go 1.26.8` made each importer upgrade to that patch
// release (or download it) for nothing the code needs.
func TestGoDirectivesAskNoPatchRelease(t *testing.T) {
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`)
	for _, path := range []string{"../go.mod", "../bench/go.mod", "../interop/go.mod", "k8s/go.mod"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := goLine.FindSubmatch(b)
		if m == nil {
			t.Errorf("%s: no go directive", path)
			continue
		}
		if v := string(m[1]); !regexp.MustCompile(`^1\.\d+(\.0)?$`).MatchString(v) {
			t.Errorf("%s: go %s asks for a patch release; want go 1.N.0", path, v)
		}
		if strings.Contains(string(b), "\ntoolchain ") {
			t.Errorf("%s names a toolchain", path)
		}
	}
}
