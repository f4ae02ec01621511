package uringhttp

import (
	"math/rand"
	"net/http"
	"strings"
	"testing"
)

// writeHeaderSorted writes the bytes Header.WriteSubset writes.
func TestWriteHeaderSortedMatchesWriteSubset(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pieces := []string{"a", "B", "x-y", "Content-Type", "bad name", "bad\x01", "Z", " ", "\t", "\r", "\n", "v", "é", ":"}
	pick := func() string {
		var sb strings.Builder
		for n := rng.Intn(4); n >= 0; n-- {
			sb.WriteString(pieces[rng.Intn(len(pieces))])
		}
		return sb.String()
	}
	for i := 0; i < 5000; i++ {
		h := http.Header{}
		for n := rng.Intn(20); n > 0; n-- {
			k := pick()
			for m := rng.Intn(3); m >= 0; m-- {
				h[k] = append(h[k], pick())
			}
		}
		var exclude map[string]bool
		if rng.Intn(2) == 0 {
			exclude = map[string]bool{}
			for k := range h {
				if rng.Intn(3) == 0 {
					exclude[k] = true
				}
			}
		}
		var want strings.Builder
		h.WriteSubset(&want, exclude)
		hc := &hconn{}
		writeHeaderSorted(outWriter{hc}, h, exclude)
		if got := string(hc.out); got != want.String() {
			t.Fatalf("header %q exclude %v:\n got %q\nwant %q", h, exclude, got, want.String())
		}
		if hc.out != nil {
			putBuf(hc.out)
		}
	}
}
