package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `{"server":"std","config":"i","round":1,"tps":100,"p50_us":10,"p99_us":20,"errors":0,"server_cpu_ns_per_msg":1000,"server_ctxsw_per_1k":50}
{"server":"gnet","config":"i","round":1,"tps":150,"p50_us":8,"p99_us":15,"errors":0,"server_cpu_ns_per_msg":500,"server_ctxsw_per_1k":5}
{"server":"uring-conn","config":"i","round":1,"failed":"build failed"}
{"server":"std","config":"i","round":2,"tps":120,"p50_us":12,"p99_us":22,"errors":0,"server_cpu_ns_per_msg":900,"server_ctxsw_per_1k":40}
{"server":"gnet","config":"i","round":2,"tps":250,"p50_us":6,"p99_us":14,"errors":0,"server_cpu_ns_per_msg":400,"server_ctxsw_per_1k":4}
{"server":"std","config":"i","round":3,"tps":110,"p50_us":11,"p99_us":21,"errors":0,"server_cpu_ns_per_msg":950,"server_ctxsw_per_1k":45}

{"server":"std","config":"ii","round":1,"tps":80,"p50_us":1,"p99_us":2,"errors":0}
`

func TestReport(t *testing.T) {
	runs, err := readRuns(strings.NewReader(sample), "sample")
	if err != nil {
		t.Fatal(err)
	}
	groups := aggregate(runs)
	if len(groups) != 4 {
		t.Fatalf("got %d groups, want 4", len(groups))
	}
	std := groups[0]
	if std.Server != "std" || std.TPS.Median != 110 || std.TPS.Min != 100 || std.TPS.Max != 120 || std.CPU.Median != 950 {
		t.Errorf("std group %+v", std)
	}
	if g := groups[1]; g.TPS.Median != 200 { // even count: mean of the middle two
		t.Errorf("gnet median %v, want 200", g.TPS.Median)
	}
	var b strings.Builder
	writeTable(&b, groups, "std")
	out := b.String()
	for _, want := range []string{
		"| i | std | 3 | 110 | 100..120 | 11 | 21 | 950 | 45.0 | 1.00x | 1.00x |",
		"| i | gnet | 2 | 200 | 150..250 | 7 | 14 | 450 | 4.5 | 1.82x | 0.47x |",
		"| i | uring-conn | 1 (1 failed: build failed) | FAILED |",
		"| ii | std | 1 | 80 | 80..80 | 1 | 2 | - | - | 1.00x | - |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	png := filepath.Join(t.TempDir(), "c.png")
	if err := writeChart(png, groups); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() < 1000 {
		t.Errorf("chart: %v %v", fi, err)
	}
}

func TestBadLine(t *testing.T) {
	if _, err := readRuns(strings.NewReader("{\"tps\":1}\n"), "x"); err == nil || !strings.Contains(err.Error(), "x:1") {
		t.Errorf("err = %v, want a line-numbered error", err)
	}
}
