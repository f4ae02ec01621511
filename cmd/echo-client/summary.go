package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// summary is the result of a run. Pointer fields are optional and printed
// only when they were measured; the open-loop fields only in open loop.
type summary struct {
	TPS     int64  `json:"tps"`
	P50us   int64  `json:"p50_us"`
	P90us   *int64 `json:"p90_us,omitempty"`
	P99us   int64  `json:"p99_us"`
	P999us  int64  `json:"p999_us"`
	P9999us *int64 `json:"p9999_us,omitempty"`
	MaxUs   *int64 `json:"max_us,omitempty"`
	Errors  int64  `json:"errors"`
	Conns   int    `json:"conns"`
	*OpenLoop
	ClientCPU    *int64   `json:"client_cpu_ns_per_msg,omitempty"`
	ServerCPU    *int64   `json:"server_cpu_ns_per_msg,omitempty"`
	ServerCtxsw  *float64 `json:"server_ctxsw_per_1k,omitempty"`
	ServerSQEs   *float64 `json:"server_sqes_per_msg,omitempty"`
	ServerCQEs   *float64 `json:"server_cqes_per_msg,omitempty"`
	CQEsPerEnter *float64 `json:"cqes_per_enter,omitempty"`
	Msgs         uint64   `json:"msgs"`
	DurationS    float64  `json:"duration_s"`
	Size         int      `json:"size"`
	Depth        int      `json:"depth"`
}

// write prints s as the one summary line, or as one JSON object.
func (s *summary) write(w io.Writer, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var b strings.Builder
	if o := s.OpenLoop; o != nil {
		fmt.Fprintf(&b, "tps=%d p50_us=%d p90_us=%d p99_us=%d p999_us=%d p9999_us=%d max_us=%d errors=%d conns=%d"+
			" rate=%.0f sent_rate=%d late=%d late_max_us=%d backlog=%d",
			s.TPS, s.P50us, *s.P90us, s.P99us, s.P999us, *s.P9999us, *s.MaxUs, s.Errors, s.Conns,
			o.Rate, o.SentRate, o.Late, o.LateMaxUs, o.Backlog)
	} else {
		fmt.Fprintf(&b, "tps=%d p50_us=%d p99_us=%d p999_us=%d errors=%d conns=%d",
			s.TPS, s.P50us, s.P99us, s.P999us, s.Errors, s.Conns)
	}
	if s.ClientCPU != nil {
		fmt.Fprintf(&b, " client_cpu_ns_per_msg=%d", *s.ClientCPU)
	}
	if s.ServerCPU != nil {
		fmt.Fprintf(&b, " server_cpu_ns_per_msg=%d", *s.ServerCPU)
	}
	if s.ServerCtxsw != nil {
		fmt.Fprintf(&b, " server_ctxsw_per_1k=%.2f", *s.ServerCtxsw)
	}
	if s.ServerSQEs != nil {
		fmt.Fprintf(&b, " server_sqes_per_msg=%.3f server_cqes_per_msg=%.3f", *s.ServerSQEs, *s.ServerCQEs)
	}
	if s.CQEsPerEnter != nil {
		fmt.Fprintf(&b, " cqes_per_enter=%.2f", *s.CQEsPerEnter)
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// OpenLoop is what an open-loop run (-rate) adds to the summary; it is
// exported only so that encoding/json can fill it in (the tests read the
// summary back).
type OpenLoop struct {
	Rate      float64 `json:"rate"`        // the -rate asked for, msgs/s
	SentRate  int64   `json:"sent_rate"`   // messages put on the wire per second in the window
	Late      uint64  `json:"late"`        // messages the client released more than -late-after behind schedule
	LateMaxUs int64   `json:"late_max_us"` // the most any message was released behind schedule
	Backlog   uint64  `json:"backlog"`     // messages due by the window's end and not yet echoed
}

// usOf converts nanoseconds to whole microseconds, rounding.
func usOf(ns int64) int64 { return (ns + 500) / 1000 }
