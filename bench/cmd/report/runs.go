package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
)

// run is one line of results.jsonl.
type run struct {
	Server       string  `json:"server"`
	Config       string  `json:"config"`
	Round        int     `json:"round"`
	Failed       string  `json:"failed"`
	TPS          float64 `json:"tps"`
	P50us        float64 `json:"p50_us"`
	P99us        float64 `json:"p99_us"`
	Errors       float64 `json:"errors"`
	ServerCPU    float64 `json:"server_cpu_ns_per_msg"`
	ServerCtxsw  float64 `json:"server_ctxsw_per_1k"`
	CQEsPerEnter float64 `json:"cqes_per_enter"`
}

// parseRun decodes one JSON line.
func parseRun(b []byte) (run, error) {
	var r run
	if err := json.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if r.Server == "" || r.Config == "" {
		return r, errors.New(`line lacks "server" or "config"`)
	}
	return r, nil
}

func trimSpace(b []byte) []byte { return bytes.TrimSpace(b) }

// group is the runs of one server in one config, summarised.
type group struct {
	Config, Server string
	Runs, Failed   int
	Why            string // the last failure
	TPS            stats
	P50, P99       stats
	CPU, Ctxsw     stats
}

// stats summarises one field over the successful runs.
type stats struct {
	Median, Min, Max float64
	N                int
}

// summarize computes the stats of vs (zero N if empty).
func summarize(vs []float64) stats {
	if len(vs) == 0 {
		return stats{}
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stats{Median: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// aggregate groups runs by config then server, both in order of first
// appearance. A run with errors counts as failed.
func aggregate(runs []run) []*group {
	var order []*group
	index := map[[2]string]*group{}
	vals := map[*group]*[5][]float64{}
	for _, r := range runs {
		k := [2]string{r.Config, r.Server}
		g := index[k]
		if g == nil {
			g = &group{Config: r.Config, Server: r.Server}
			index[k] = g
			order = append(order, g)
			vals[g] = new([5][]float64)
		}
		g.Runs++
		switch {
		case r.Failed != "":
			g.Failed++
			g.Why = r.Failed
			continue
		case r.Errors > 0:
			g.Failed++
			g.Why = "client reported errors"
			continue
		}
		v := vals[g]
		v[0] = append(v[0], r.TPS)
		v[1] = append(v[1], r.P50us)
		v[2] = append(v[2], r.P99us)
		if r.ServerCPU > 0 {
			v[3] = append(v[3], r.ServerCPU)
		}
		if r.ServerCtxsw > 0 {
			v[4] = append(v[4], r.ServerCtxsw)
		}
	}
	for _, g := range order {
		v := vals[g]
		g.TPS, g.P50, g.P99, g.CPU, g.Ctxsw = summarize(v[0]), summarize(v[1]), summarize(v[2]), summarize(v[3]), summarize(v[4])
	}
	// Keep configs in first-appearance order, servers within a config too.
	pos := map[string]int{}
	for _, g := range order {
		if _, ok := pos[g.Config]; !ok {
			pos[g.Config] = len(pos)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return pos[order[i].Config] < pos[order[j].Config] })
	return order
}
