package deploy

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/runtime/uringprom"
)

// TestKnownMetricsAreLive holds knownMetrics to the truth: the uringrt_*
// families a live runtime registers (io_uring backend, worker pool), with
// their types, are exactly knownMetrics.
func TestKnownMetricsAreLive(t *testing.T) {
	reg := prometheus.NewRegistry()
	rt, err := uringrt.New(uringrt.Config{Loops: 1, Backend: uringrt.BackendUring, Metrics: true})
	if errors.Is(err, uringrt.ErrNoIOUring) {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := uringprom.Register(reg, rt); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	live := make(map[string]string)
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), MetricPrefix) {
			continue
		}
		live[mf.GetName()] = strings.ToLower(dto.MetricType_name[int32(mf.GetType())])
	}
	var names []string
	for n := range live {
		names = append(names, n)
	}
	for n := range knownMetrics {
		if _, ok := live[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		switch got, want := live[n], knownMetrics[n]; {
		case want == "":
			t.Errorf("runtime exports %s (%s); add it to knownMetrics", n, got)
		case got == "":
			t.Errorf("knownMetrics lists %s (%s); the runtime does not export it", n, want)
		case got != want:
			t.Errorf("%s is a %s; knownMetrics says %s", n, got, want)
		}
	}
}
