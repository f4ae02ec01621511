package netpoll

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkNop measures one NOP prepared, submitted and reaped, at batch
// sizes 1 and 32 (batch SQEs per SubmitAndWait). Reported per NOP.
func BenchmarkNop(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			r := newTestRing(b, Params{Entries: 64})
			var cqes [64]CQE
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(batch, b.N-done)
				for i := 0; i < n; i++ {
					r.GetSQE().PrepNop()
				}
				if _, err := r.SubmitAndWait(uint32(n), time.Second, 0); err != nil {
					b.Fatal(err)
				}
				got, _ := r.Reap(cqes[:])
				done += got
			}
		})
	}
}
