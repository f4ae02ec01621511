package wsconform

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Verdict is a case's outcome, ordered from worst to best.
type Verdict int

// Verdicts as Autobahn names them.
const (
	Failed        Verdict = iota // the server broke the RFC
	Unimplemented                // an optional feature (permessage-deflate) is absent
	Informational                // recorded, not judged
	NonStrict                    // allowed, but not the strict behaviour
	OK
)

func (v Verdict) String() string {
	return [...]string{"FAILED", "UNIMPLEMENTED", "INFORMATIONAL", "NON-STRICT", "OK"}[v]
}

// Expect is what a case wants the server to do.
type Expect struct {
	OK        []Obs   // what the server sends for OK
	NonStrict [][]Obs // other sequences accepted as NON-STRICT
	// Fail: the server must fail the connection (close it, with a close
	// frame carrying one of Codes, 1002 by default, or without one).
	Fail bool
	// Codes the server may answer our close with when !Fail (default: 1000).
	Codes []int
	// FailFast: the case ended its sends early because the server failed it
	// in time; FailLate: it failed only after later frames (NON-STRICT).
	FailLate      bool
	Informational bool
	Note          string
}

// Case is one conformance case: Run sends what the case sends over s and
// returns what the server must do.
type Case struct {
	ID    string
	Desc  string
	Offer string // Sec-WebSocket-Extensions to offer; "" none
	// NeedDeflate: without permessage-deflate the case is UNIMPLEMENTED,
	// unless DeclineOK: every offer asks for what a server may decline
	// (RFC 7692 section 7.1.2.1: a server that does not support
	// server_max_window_bits declines the offer), and the case runs
	// uncompressed.
	NeedDeflate, DeclineOK bool
	Run                    func(s *Client) Expect
}

// Section is the case's top-level section ("1" for "1.1.2").
func (c Case) Section() string { s, _, _ := strings.Cut(c.ID, "."); return s }

// Result is a case's verdict.
type Result struct {
	ID       string
	Verdict  Verdict
	Note     string
	Duration time.Duration
}

// Config says where the server under test is and how patient to be.
type Config struct {
	Addr     string        // host:port
	Path     string        // the upgrade path; "/" if empty
	Timeout  time.Duration // per wait; 10 s if zero
	Parallel int           // cases at once; 8 if zero
}

// Run runs cases against the server of cfg, cfg.Parallel at a time, and
// returns their results in the order of cases.
func Run(cfg Config, cases []Case) []Result {
	if cfg.Path == "" {
		cfg.Path = "/"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 8
	}
	out := make([]Result, len(cases))
	sem := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			start := time.Now()
			out[i] = runCase(cfg, c)
			out[i].ID, out[i].Duration = c.ID, time.Since(start)
		}()
	}
	wg.Wait()
	return out
}

func runCase(cfg Config, c Case) Result {
	s, err := Dial(cfg.Addr, cfg.Path, c.Offer, cfg.Timeout)
	if err != nil {
		return Result{Verdict: Failed, Note: err.Error()}
	}
	defer s.Close()
	declined := c.NeedDeflate && !s.Deflate()
	if declined && !c.DeclineOK {
		return Result{Verdict: Unimplemented, Note: "permessage-deflate not accepted"}
	}
	e := c.Run(s)
	if declined {
		e.Note = strings.TrimSpace(e.Note + " declined an offer it cannot honour; echoed uncompressed")
	}
	if !e.Fail {
		s.WaitObs(len(e.OK), cfg.Timeout)
		s.mu.Lock()
		sent := s.closeSent
		s.mu.Unlock()
		if !sent {
			s.SendClose(1000, "")
		}
	}
	dropped := s.WaitEOF(cfg.Timeout)
	v, note := judge(s, e, dropped)
	if e.Note != "" {
		note = strings.TrimSpace(e.Note + "; " + note)
	}
	return Result{Verdict: v, Note: note}
}

// judge compares what the server did with e.
func judge(s *Client, e Expect, dropped bool) (Verdict, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.badFrame != "" {
		return Failed, s.badFrame
	}
	if s.closeErr != "" {
		return Failed, s.closeErr
	}
	if e.Informational {
		return Informational, fmt.Sprintf("got %v, close code %d", short(s.obs), s.closeCode)
	}
	if !dropped {
		if e.Fail {
			return Failed, "the server did not fail the connection"
		}
		if s.closeCode == 0 {
			return Failed, "no close handshake"
		}
	}
	v := OK
	switch {
	case sameObs(s.obs, e.OK):
	case anyObs(s.obs, e.NonStrict):
		v = NonStrict
	default:
		return Failed, fmt.Sprintf("got %v, want %v", short(s.obs), short(e.OK))
	}
	codes := e.Codes
	if e.Fail && codes == nil {
		codes = []int{1002}
	} else if codes == nil {
		codes = []int{1000}
	}
	note := ""
	if s.closeCode != 0 && !contains(codes, s.closeCode) {
		return Failed, fmt.Sprintf("close code %d, want one of %v", s.closeCode, codes)
	}
	if !e.Fail && s.closeCode == 0 {
		return Failed, "TCP dropped without a close frame"
	}
	if !dropped {
		v, note = min(v, NonStrict), "the server kept TCP open after the close handshake"
	}
	if e.FailLate {
		v, note = min(v, NonStrict), "failed only after later frames (not fail-fast)"
	}
	if s.deflate != nil && s.deflate.ignoredRequest {
		v, note = min(v, NonStrict), "accepted permessage-deflate ignoring a requested parameter"
	}
	return v, note
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func sameObs(a, b []Obs) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

func anyObs(a []Obs, alts [][]Obs) bool {
	for _, b := range alts {
		if sameObs(a, b) {
			return true
		}
	}
	return false
}

func short(o []Obs) string {
	if len(o) > 6 {
		return fmt.Sprintf("%v ... (%d)", o[:6], len(o))
	}
	return fmt.Sprint(o)
}

// Counts tallies results per section: counts[section][verdict].
func Counts(rs []Result) map[string]map[Verdict]int {
	m := map[string]map[Verdict]int{}
	for _, r := range rs {
		sec, _, _ := strings.Cut(r.ID, ".")
		if m[sec] == nil {
			m[sec] = map[Verdict]int{}
		}
		m[sec][r.Verdict]++
	}
	return m
}

// Summary formats Counts as one line per section.
func Summary(rs []Result) string {
	m := Counts(rs)
	secs := make([]string, 0, len(m))
	for s := range m {
		secs = append(secs, s)
	}
	sort.Slice(secs, func(i, j int) bool { a, _ := strconv.Atoi(secs[i]); b, _ := strconv.Atoi(secs[j]); return a < b })
	var b strings.Builder
	for _, s := range secs {
		fmt.Fprintf(&b, "section %2s:", s)
		for v := OK; v >= Failed; v-- {
			if n := m[s][v]; n > 0 {
				fmt.Fprintf(&b, " %s %d", v, n)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
