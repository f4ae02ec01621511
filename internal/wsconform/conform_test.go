package wsconform

import (
	"os"
	"sort"
	"testing"
)

// target is a server under test: start serves it and returns its address.
type target struct {
	name string
	// candidate: its verdicts must be no worse than the baseline's.
	candidate bool
	start     func(t *testing.T) string
}

func targets() []target {
	return []target{
		{"gorilla/net-http", false, func(t *testing.T) string { return serveStd(t, gorillaEcho(true)) }},
		{"uringws/uringhttp", true, func(t *testing.T) string { return serveUringhttp(t, uringwsEcho()) }},
		{"uringws/net-http", true, func(t *testing.T) string { return serveStd(t, uringwsEcho()) }},
	}
}

// TestConformance runs every case against each target and fails where a
// candidate's verdict is worse than gorilla/websocket's on net/http.
// WSCONFORM_FULL=1 sends Autobahn's 1000 messages in each compression case.
func TestConformance(t *testing.T) {
	cases := All(os.Getenv("WSCONFORM_FULL") != "")
	results := map[string][]Result{}
	ts := targets()
	for _, tg := range ts {
		addr := tg.start(t)
		results[tg.name] = Run(Config{Addr: addr, Parallel: 16}, cases)
		t.Logf("%s:\n%s", tg.name, Summary(results[tg.name]))
	}
	base := results[ts[0].name]
	for _, r := range base {
		if r.Verdict == Failed {
			t.Logf("%s %s FAILED: %s", ts[0].name, r.ID, r.Note)
		}
	}
	for _, tg := range ts[1:] {
		if !tg.candidate {
			continue
		}
		var worse []string
		for i, r := range results[tg.name] {
			if r.Verdict < base[i].Verdict {
				worse = append(worse, r.ID)
				t.Errorf("%s case %s (%s): %s, gorilla %s: %s", tg.name, r.ID, cases[i].Desc, r.Verdict, base[i].Verdict, r.Note)
			}
		}
		sort.Strings(worse)
	}
}

// TestSuiteCatchesFaults checks that the suite fails a server that breaks
// the RFC: an echo that never validates UTF-8 passes framing and fails the
// invalid-text cases.
func TestSuiteCatchesFaults(t *testing.T) {
	addr := serveStd(t, gorillaEcho(false))
	var cs []Case
	want := map[string]Verdict{"1.1.1": OK, "2.1": OK, "5.6": OK, "6.3.1": Failed, "6.6.1": Failed, "6.20.1": Failed, "6.22.1": OK, "7.9.1": OK, "12.1.1": OK}
	for _, c := range All(false) {
		if _, ok := want[c.ID]; ok {
			cs = append(cs, c)
		}
	}
	if len(cs) != len(want) {
		t.Fatalf("found %d of %d cases", len(cs), len(want))
	}
	for _, r := range Run(Config{Addr: addr}, cs) {
		t.Logf("%s %s %v %s", r.ID, r.Verdict, r.Duration, r.Note)
		if r.Verdict != want[r.ID] {
			t.Errorf("case %s: %s (%s), want %s", r.ID, r.Verdict, r.Note, want[r.ID])
		}
	}
}
