package main

import (
	"strings"
	"testing"
)

func TestSumMetrics(t *testing.T) {
	text := `# HELP uringrt_cqes_reaped_total CQEs reaped.
# TYPE uringrt_cqes_reaped_total counter
uringrt_cqes_reaped_total{loop="0"} 100
uringrt_cqes_reaped_total{loop="1",odd="a} \"b\" c"} 50 1700000000000
uringrt_cqes_reaped_total_other 7
uringrt_enter_calls_total 3e1

uringrt_enter_calls_total{loop="1"} 10
`
	got, err := sumMetrics(strings.NewReader(text), metricCQEs, metricEnters)
	if err != nil {
		t.Fatal(err)
	}
	if got[metricCQEs] != 150 || got[metricEnters] != 40 {
		t.Errorf("got %v, want cqes 150 enters 40", got)
	}
}
