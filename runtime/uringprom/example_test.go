package uringprom_test

import (
	"fmt"
	"log"

	"github.com/prometheus/client_golang/prometheus"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/runtime/uringprom"
)

// ExampleRegister exports a runtime's counters (namespace uringrt) on a
// Prometheus registry; serve it with promhttp.HandlerFor.
func ExampleRegister() {
	rt, err := uringrt.New(uringrt.Config{Metrics: true})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	reg := prometheus.NewRegistry()
	if err := uringprom.Register(reg, rt); err != nil {
		log.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "uringrt_backend_info" {
			fmt.Println("exported", mf.GetName())
		}
	}
	// Output: exported uringrt_backend_info
}
