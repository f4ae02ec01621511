package runtime

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// procStatusBytes returns a "kB" field of /proc/self/status (VmRSS, VmHWM)
// in bytes.
func procStatusBytes(t testing.TB, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// resetPeakRSS resets the process's peak RSS (VmHWM) to its current RSS
// (writing 5 to /proc/self/clear_refs, Linux 4.0+), so peakRSS measures
// from here and not from an earlier test of the same process.
func resetPeakRSS(t testing.TB) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// peakRSS is VmHWM: the highest RSS since resetPeakRSS.
func peakRSS(t testing.TB) int64 { return procStatusBytes(t, "VmHWM") }
