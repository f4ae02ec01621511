package uringws

import "testing"

func BenchmarkMaskBytes1K(b *testing.B) {
	p := make([]byte, 1024)
	b.SetBytes(int64(len(p)))
	for i := 0; i < b.N; i++ {
		maskBytes(testKey, i&3, p)
	}
}

func BenchmarkReadFrame1K(b *testing.B) {
	frame := clientFrame(true, 0, opBinary, testKey, make([]byte, 1024))
	benchFeed(b, frame, 1024)
}

func BenchmarkReadText1K(b *testing.B) {
	text := make([]byte, 1024)
	for i := range text {
		text[i] = 'a' + byte(i%26)
	}
	frame := clientFrame(true, 0, opText, testKey, text)
	benchFeed(b, frame, 1024)
}

// benchFeed feeds a copy of frame (of a payload of size bytes) to a
// reader b.N times.
func benchFeed(b *testing.B, frame []byte, size int64) {
	buf := make([]byte, len(frame))
	r := &reader{maxMsg: 1 << 20}
	b.SetBytes(size)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		copy(buf, frame)
		r.feed(nopSink{}, buf)
	}
}
