package netpoll

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// needSendZC skips when the kernel lacks IORING_OP_SEND_ZC (6.0+).
func needSendZC(t testing.TB) {
	t.Helper()
	f, err := ProbeFeatures()
	if err != nil {
		t.Skip("io_uring unavailable:", err)
	}
	if !f.Ops.Has(OpSendZC) {
		t.Skip("kernel lacks IORING_OP_SEND_ZC (6.0+)")
	}
}

// TestSendZCNotif checks the two-CQE protocol of SEND_ZC: the result with
// IORING_CQE_F_MORE, then the notification, and the bytes arrive intact.
func TestSendZCNotif(t *testing.T) {
	needSendZC(t)
	r := newTestRing(t, Params{Entries: 8})
	a, b := tcpPair(t)
	msg := bytes.Repeat([]byte("zerocopy"), 8192) // 64 KiB
	r.GetSQE().SetUserData(7).PrepSendZC(a, msg, unix.MSG_NOSIGNAL)
	first := waitOne(t, r)
	if first.UserData != 7 || first.Res != int32(len(msg)) || first.Notif() {
		t.Fatalf("first CQE = %+v, want res %d without NOTIF", first, len(msg))
	}
	if first.More() {
		n := waitOne(t, r)
		if n.UserData != 7 || !n.Notif() || n.Res != 0 {
			t.Fatalf("notification CQE = %+v", n)
		}
	}
	got := make([]byte, 0, len(msg))
	buf := make([]byte, 16<<10)
	deadline := time.Now().Add(2 * time.Second)
	for len(got) < len(msg) && time.Now().Before(deadline) {
		n, err := unix.Read(b, buf)
		if err == unix.EAGAIN {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("received %d bytes, want the %d sent", len(got), len(msg))
	}
}

// processCPU returns the process's user and system CPU time so far (ns).
func processCPU() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkSendLoopback compares IORING_OP_SEND with IORING_OP_SEND_ZC to a
// TCP peer on loopback, per send of size bytes: each iteration submits one
// send and waits until the buffer may be reused (the send's CQE, and for
// SEND_ZC also its notification), as a Write that returns with the caller's
// buffer free must. A goroutine drains the peer (io.Copy, 32 KiB reads).
// cpu-ns/op is the whole process's CPU (both ends) per send.
//
//	go test -run '^$' -bench SendLoopback -benchtime 2s -count 5 ./netpoll/
func BenchmarkSendLoopback(b *testing.B) {
	needSendZC(b)
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		for _, zc := range []bool{false, true} {
			name := "send"
			if zc {
				name = "send_zc"
			}
			b.Run(fmt.Sprintf("%s/%dKiB", name, size>>10), func(b *testing.B) {
				benchSend(b, size, zc)
			})
		}
	}
}

func benchSend(b *testing.B, size int, zc bool) {
	r := newTestRing(b, Params{Entries: 8})
	a, peer := tcpPair(b)
	unix.SetNonblock(peer, false)
	f := os.NewFile(uintptr(peer), "peer")
	drained := make(chan struct{})
	go func() {
		io.Copy(io.Discard, f)
		close(drained)
	}()
	buf := bytes.Repeat([]byte{0x5a}, size)
	b.SetBytes(int64(size))
	cpu0 := processCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := 0; off < size; {
			sqe := r.GetSQE().SetUserData(1)
			if zc {
				sqe.PrepSendZC(a, buf[off:], unix.MSG_NOSIGNAL)
			} else {
				sqe.PrepSend(a, buf[off:], unix.MSG_NOSIGNAL)
			}
			c := waitOne(b, r)
			if c.Res < 0 {
				b.Fatal(unix.Errno(-c.Res))
			}
			off += int(c.Res)
			for c.More() { // SEND_ZC: wait for the notification
				c = waitOne(b, r)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	unix.Shutdown(a, unix.SHUT_WR)
	<-drained
	f.Close()
}
