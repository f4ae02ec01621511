package deploy

import (
	"errors"
	"io"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/runtime/uringprom"
)

// TestKnownMetricsAreLive holds knownMetrics to the truth: the uringrt_*
// families a live runtime registers (io_uring backend, worker pool), with
// their types, are exactly knownMetrics. The pool exports its families
// once used: a MayBlocker handler echoes one byte on it first.
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
	usePool(t, rt)
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

// usePool echoes one byte through a MayBlocker handler of rt, whose
// callbacks run on rt's worker pool.
func usePool(t *testing.T, rt *uringrt.Runtime) {
	t.Helper()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go rt.Serve(ln, uringrt.HandlerFuncs{Data: func(c *uringrt.CallbackConn, d []byte) { c.Write(d) }, Blocking: true})
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("x"))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
}
