package main

import "testing"

func TestBucketRoundTrip(t *testing.T) {
	for _, v := range []int64{0, 1, 63, 64, 65, 127, 128, 1000, 12345, 1e6, 1e9, 1<<38 - 1} {
		i := bucketOf(v)
		if max := bucketMax(i); max < v {
			t.Errorf("bucketMax(bucketOf(%d)) = %d < value", v, max)
		}
		if i > 0 && bucketMax(i-1) >= v {
			t.Errorf("value %d also fits bucket %d (max %d)", v, i-1, bucketMax(i-1))
		}
	}
	if got := bucketOf(1 << 50); got != histBuckets-1 {
		t.Errorf("huge value went to bucket %d, want last %d", got, histBuckets-1)
	}
}

func TestQuantiles(t *testing.T) {
	uniform := func(n int64) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(i) + 1
		}
		return v
	}
	tests := []struct {
		name   string
		values []int64
		q      float64
		want   int64
	}{
		{"empty", nil, 0.5, 0},
		{"single", []int64{42}, 0.99, 42},
		{"exact small p50", uniform(100), 0.50, 50},
		{"exact small p99", uniform(100), 0.99, 99},
		{"exact small max", uniform(100), 1, 100},
		{"p50 of 1..10000", uniform(10000), 0.50, 5000},
		{"p99 of 1..10000", uniform(10000), 0.99, 9900},
		{"p999 of 1..10000", uniform(10000), 0.999, 9990},
		{"outlier at p999", append(make([]int64, 998), 1e6, 1e6), 0.999, 1e6},
		{"outlier beyond p99", append(make([]int64, 998), 1e6, 1e6), 0.99, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var one, h histogram
			for _, v := range tt.values {
				one.record(v)
			}
			h.merge(&one)
			got := h.quantile(tt.q)
			// Buckets are at most 1/histSub of their values wide.
			if got < tt.want || float64(got) > float64(tt.want)*(1+1.0/histSub)+1 {
				t.Errorf("quantile(%v) = %d, want %d (+%.1f%%)", tt.q, got, tt.want, 100.0/histSub)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	var a, b, c histogram
	for i := int64(1); i <= 50; i++ {
		b.record(i)
		c.record(i + 50)
	}
	a.merge(&b)
	a.merge(&c)
	if a.n != 100 || a.quantile(0.5) != 50 || a.quantile(1) < 100 || a.quantile(1) > 101 {
		t.Errorf("merged n=%d p50=%d max=%d, want 100 50 100..101", a.n, a.quantile(0.5), a.quantile(1))
	}
}

func TestRecordNoAlloc(t *testing.T) {
	h := new(histogram)
	if n := testing.AllocsPerRun(1000, func() { h.record(12345) }); n != 0 {
		t.Errorf("record allocates %v times", n)
	}
}
