package main

import (
	"fmt"
	"io"
	"strconv"
)

// writeTable prints the markdown table of groups; ratios are to the
// baseline server of the same config.
func writeTable(w io.Writer, groups []*group, baseline string) {
	base := map[string]*group{}
	for _, g := range groups {
		if g.Server == baseline && g.TPS.N > 0 {
			base[g.Config] = g
		}
	}
	fmt.Fprintf(w, "| config | server | runs | msgs/s (median) | min..max | p50 us | p99 us | server CPU ns/msg | ctxsw/1k msgs | msgs/s vs %s | CPU/msg vs %s |\n", baseline, baseline)
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, g := range groups {
		runs := strconv.Itoa(g.Runs)
		if g.Failed > 0 {
			runs = fmt.Sprintf("%d (%d failed: %s)", g.Runs, g.Failed, g.Why)
		}
		if g.TPS.N == 0 {
			fmt.Fprintf(w, "| %s | %s | %s | FAILED | | | | | | | |\n", g.Config, g.Server, runs)
			continue
		}
		tpsRatio, cpuRatio := "", ""
		if b := base[g.Config]; b != nil {
			tpsRatio = ratio(g.TPS, b.TPS)
			cpuRatio = ratio(g.CPU, b.CPU)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.0f..%.0f | %s | %s | %s | %s | %s | %s |\n",
			g.Config, g.Server, runs, g.TPS.Median, g.TPS.Min, g.TPS.Max,
			num(g.P50, "%.0f"), num(g.P99, "%.0f"), num(g.CPU, "%.0f"), num(g.Ctxsw, "%.1f"),
			tpsRatio, cpuRatio)
	}
}

// num formats the median of s, or "-" when nothing was measured.
func num(s stats, format string) string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf(format, s.Median)
}

// ratio formats a.Median/b.Median, or "-".
func ratio(a, b stats) string {
	if a.N == 0 || b.N == 0 || b.Median == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a.Median/b.Median)
}
