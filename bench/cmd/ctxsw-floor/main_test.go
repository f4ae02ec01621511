package main

import (
	"testing"
	"time"
)

func TestMeasureCounts(t *testing.T) {
	for _, locked := range []bool{false, true} {
		r := measure(300*time.Millisecond, locked)
		if r.Voluntary < 0 || r.Involuntary < 0 || r.Seconds != 0.3 {
			t.Fatalf("measure(locked=%v) = %+v", locked, r)
		}
		t.Logf("%+v", r)
	}
}
