package netpoll

import (
	"bytes"
	"errors"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tcpPair returns two connected nonblocking TCP socket fds on loopback.
func tcpPair(t testing.TB) (a, b int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	a = dupFD(t, c)
	b = dupFD(t, s)
	c.Close()
	s.Close()
	t.Cleanup(func() { unix.Close(a); unix.Close(b) })
	return a, b
}

func dupFD(t testing.TB, c net.Conn) int {
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	unix.SetNonblock(fd, true)
	return fd
}

// waitOne submits and returns the next CQE, failing after 2 s.
func waitOne(t testing.TB, r *Ring) CQE {
	t.Helper()
	var c [1]CQE
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := r.SubmitAndWait(1, 100*time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
		if n, _ := r.Reap(c[:]); n == 1 {
			return c[0]
		}
	}
	t.Fatal("no CQE within 2s")
	return CQE{}
}

func TestSendRecvRoundTrip(t *testing.T) {
	r := newTestRing(t, Params{Entries: 8})
	a, b := tcpPair(t)
	buf := make([]byte, 64)
	r.GetSQE().SetUserData(1).PrepRecv(b, buf, 0)
	msg := []byte("hello ring")
	r.GetSQE().SetUserData(2).PrepSend(a, msg, unix.MSG_NOSIGNAL)
	got := map[uint64]int32{}
	for len(got) < 2 {
		c := waitOne(t, r)
		got[c.UserData] = c.Res
	}
	if got[2] != int32(len(msg)) || got[1] != int32(len(msg)) || !bytes.Equal(buf[:len(msg)], msg) {
		t.Fatalf("send/recv = %v, buf %q", got, buf)
	}
}

func TestWritevSendmsgRecvmsg(t *testing.T) {
	r := newTestRing(t, Params{Entries: 8})
	a, b := tcpPair(t)
	p1, p2 := []byte("abc"), []byte("defg")
	iov := []unix.Iovec{{Base: &p1[0]}, {Base: &p2[0]}}
	iov[0].SetLen(3)
	iov[1].SetLen(4)
	r.GetSQE().SetUserData(1).PrepWritev(a, unsafe.Pointer(&iov[0]), 2, ^uint64(0))
	if c := waitOne(t, r); c.Res != 7 {
		t.Fatalf("writev res %d", c.Res)
	}
	var msg unix.Msghdr
	msg.Iov = &iov[0]
	msg.SetIovlen(2)
	r.GetSQE().SetUserData(2).PrepSendmsg(a, unsafe.Pointer(&msg), unix.MSG_NOSIGNAL)
	if c := waitOne(t, r); c.Res != 7 {
		t.Fatalf("sendmsg res %d", c.Res)
	}
	in := make([]byte, 32)
	riov := unix.Iovec{Base: &in[0]}
	riov.SetLen(len(in))
	var rmsg unix.Msghdr
	rmsg.Iov = &riov
	rmsg.SetIovlen(1)
	total := 0
	for total < 14 {
		r.GetSQE().SetUserData(3).PrepRecvmsg(b, unsafe.Pointer(&rmsg), 0)
		c := waitOne(t, r)
		if c.Res <= 0 {
			t.Fatalf("recvmsg res %d", c.Res)
		}
		total += int(c.Res)
		riov.Base = &in[total]
		riov.SetLen(len(in) - total)
	}
	if string(in[:14]) != "abcdefgabcdefg" {
		t.Fatalf("got %q", in[:14])
	}
}

func TestMultishotRecvBufRingENOBUFS(t *testing.T) {
	r := newTestRing(t, Params{Entries: 16, CQEntries: 64})
	a, b := tcpPair(t)
	br, err := r.RegisterBufRing(7, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	arm := func() { r.GetSQE().SetUserData(9).PrepRecvMultishot(b, br.Group(), 0) }
	arm()
	// Send more than 4 buffers of 16 bytes can hold, in separate writes.
	var sent []byte
	for i := 0; i < 8; i++ {
		chunk := bytes.Repeat([]byte{byte('a' + i)}, 16)
		sent = append(sent, chunk...)
		if _, err := unix.Write(a, chunk); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	var got []byte
	sawMore, sawNoBufs := 0, false
	for len(got) < len(sent) {
		c := waitOne(t, r)
		switch {
		case c.Res == -int32(syscall.ENOBUFS):
			sawNoBufs = true
			if c.More() {
				t.Fatal("ENOBUFS CQE still has F_MORE")
			}
			br.Commit()
			arm()
		case c.Res > 0:
			id, ok := c.BufferID()
			if !ok {
				t.Fatal("CQE without F_BUFFER")
			}
			if c.More() {
				sawMore++
			}
			got = append(got, br.Buf(id, int(c.Res))...)
			br.Recycle(id) // published only on the next Commit: forces ENOBUFS
			if !c.More() {
				br.Commit()
				arm()
			}
		default:
			t.Fatalf("unexpected CQE %+v", c)
		}
	}
	if !bytes.Equal(got, sent) {
		t.Fatalf("bytes lost or reordered:\n got %q\nwant %q", got, sent)
	}
	if sawMore < 2 || !sawNoBufs {
		t.Fatalf("F_MORE CQEs = %d, ENOBUFS seen = %v", sawMore, sawNoBufs)
	}
}

func listenFD(t testing.TB) (int, string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 512); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(fd)
	return fd, net.JoinHostPort("127.0.0.1", itoa(sa.(*unix.SockaddrInet4).Port))
}

func TestMultishotAccept100(t *testing.T) {
	r := newTestRing(t, Params{Entries: 16, CQEntries: 256})
	lfd, addr := listenFD(t)
	r.GetSQE().SetUserData(1).PrepAcceptMultishot(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 100; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	accepted := 0
	for accepted < 100 {
		c := waitOne(t, r)
		if c.Res < 0 {
			t.Fatalf("accept res %d", c.Res)
		}
		unix.Close(int(c.Res))
		accepted++
		if !c.More() {
			r.GetSQE().SetUserData(1).PrepAcceptMultishot(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		}
	}
}

func TestConnectPollShutdownClose(t *testing.T) {
	r := newTestRing(t, Params{Entries: 8})
	lfd, addr := listenFD(t)
	_ = addr
	sa, _ := unix.Getsockname(lfd)
	var raw unix.RawSockaddrInet4
	raw.Family = unix.AF_INET
	raw.Addr = [4]byte{127, 0, 0, 1}
	port := sa.(*unix.SockaddrInet4).Port
	raw.Port = uint16(port>>8) | uint16(port&0xff)<<8
	cfd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	r.GetSQE().SetUserData(1).PrepConnect(cfd, unsafe.Pointer(&raw), uint32(unsafe.Sizeof(raw)))
	if c := waitOne(t, r); c.Res != 0 {
		t.Fatalf("connect res %d", c.Res)
	}
	// accept it
	r.GetSQE().SetUserData(2).PrepAccept(lfd, nil, nil, unix.SOCK_NONBLOCK)
	c := waitOne(t, r)
	if c.Res < 0 {
		t.Fatalf("accept res %d", c.Res)
	}
	sfd := int(c.Res)
	defer unix.Close(sfd)
	// poll for POLLIN, then the peer shuts down its write side.
	r.GetSQE().SetUserData(3).PrepPollAdd(sfd, unix.POLLIN, false)
	r.Submit()
	r.GetSQE().SetUserData(4).PrepShutdown(cfd, unix.SHUT_WR)
	got := map[uint64]CQE{}
	for len(got) < 2 {
		c := waitOne(t, r)
		got[c.UserData] = c
	}
	if got[4].Res != 0 || got[3].Res&unix.POLLIN == 0 {
		t.Fatalf("shutdown/poll = %+v", got)
	}
	buf := make([]byte, 4)
	r.GetSQE().SetUserData(5).PrepRecv(sfd, buf, 0)
	if c := waitOne(t, r); c.Res != 0 {
		t.Fatalf("recv after peer SHUT_WR = %d, want 0 (EOF)", c.Res)
	}
	r.GetSQE().SetUserData(6).PrepClose(cfd)
	if c := waitOne(t, r); c.Res != 0 {
		t.Fatalf("close res %d", c.Res)
	}
}

func TestCancelPendingRecv(t *testing.T) {
	r := newTestRing(t, Params{Entries: 8})
	_, b := tcpPair(t)
	buf := make([]byte, 8)
	r.GetSQE().SetUserData(1).PrepRecv(b, buf, 0)
	r.Submit()
	r.GetSQE().SetUserData(2).PrepCancel(1)
	got := map[uint64]int32{}
	for len(got) < 2 {
		c := waitOne(t, r)
		got[c.UserData] = c.Res
	}
	if got[1] != -int32(syscall.ECANCELED) || got[2] != 0 {
		t.Fatalf("cancel: %v", got)
	}
	// cancel by fd (all), and poll_remove.
	r.GetSQE().SetUserData(3).PrepPollAdd(b, unix.POLLIN, true)
	r.GetSQE().SetUserData(4).PrepRecv(b, buf, 0)
	r.Submit()
	r.GetSQE().SetUserData(5).PrepCancelFD(b, true)
	got = map[uint64]int32{}
	for len(got) < 3 {
		c := waitOne(t, r)
		got[c.UserData] = c.Res
	}
	if got[5] != 2 || got[3] != -int32(syscall.ECANCELED) || got[4] != -int32(syscall.ECANCELED) {
		t.Fatalf("cancel fd: %v", got)
	}
	r.GetSQE().SetUserData(6).PrepPollAdd(b, unix.POLLIN, false)
	r.Submit()
	r.GetSQE().SetUserData(7).PrepPollRemove(6)
	got = map[uint64]int32{}
	for len(got) < 2 {
		c := waitOne(t, r)
		got[c.UserData] = c.Res
	}
	if got[7] != 0 || got[6] != -int32(syscall.ECANCELED) {
		t.Fatalf("poll remove: %v", got)
	}
	r.GetSQE().SetUserData(8).PrepRecv(b, buf, 0)
	r.Submit()
	r.GetSQE().SetUserData(9).PrepCancelAll()
	got = map[uint64]int32{}
	for len(got) < 2 {
		c := waitOne(t, r)
		got[c.UserData] = c.Res
	}
	if got[9] != 1 || got[8] != -int32(syscall.ECANCELED) {
		t.Fatalf("cancel all: %v", got)
	}
}

func TestTimeoutsAndMsgRing(t *testing.T) {
	r := newTestRing(t, Params{Entries: 8})
	ts := Timespec{Nsec: int64(20 * time.Millisecond)}
	start := time.Now()
	r.GetSQE().SetUserData(1).PrepTimeout(&ts, 0, false)
	if c := waitOne(t, r); c.Res != -int32(syscall.ETIME) || time.Since(start) < 15*time.Millisecond {
		t.Fatalf("timeout res %d after %v", c.Res, time.Since(start))
	}
	// link_timeout bounding a recv that never completes.
	_, b := tcpPair(t)
	buf := make([]byte, 8)
	r.GetSQE().SetUserData(2).SetFlags(SQEIOLink).PrepRecv(b, buf, 0)
	r.GetSQE().SetUserData(3).PrepLinkTimeout(&ts)
	got := map[uint64]int32{}
	for len(got) < 2 {
		c := waitOne(t, r)
		got[c.UserData] = c.Res
	}
	if got[2] != -int32(syscall.ECANCELED) || got[3] != -int32(syscall.ETIME) {
		t.Fatalf("link timeout: %v", got)
	}
	// msg_ring to a second ring, skipping our own CQE.
	r2 := newTestRing(t, Params{Entries: 4})
	r.GetSQE().SetFlags(SQECQESkipSuccess).PrepMsgRing(r2.FD(), 42, 77)
	r.Submit()
	if c := waitOne(t, r2); c.UserData != 77 || c.Res != 42 {
		t.Fatalf("msg_ring CQE %+v", c)
	}
}

// TestCQOverflowLosesNothing puts more completions in flight than the CQ
// holds; the kernel buffers the overflow (FEAT_NODROP) and Reap flushes it.
func TestCQOverflowLosesNothing(t *testing.T) {
	r := newTestRing(t, Params{Entries: 16, CQEntries: 16})
	const total = 200
	seen := make(map[uint64]bool)
	for i := 0; i < total; i++ {
		sqe := r.GetSQE()
		if sqe == nil {
			if _, err := r.Submit(); err != nil {
				t.Fatal(err)
			}
			sqe = r.GetSQE()
		}
		sqe.SetUserData(uint64(i)).PrepNop()
	}
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	var cqes [8]CQE
	deadline := time.Now().Add(2 * time.Second)
	for len(seen) < total && time.Now().Before(deadline) {
		n, err := r.Reap(cqes[:])
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cqes[:n] {
			seen[c.UserData] = true
		}
	}
	if len(seen) != total {
		t.Fatalf("reaped %d distinct CQEs, want %d", len(seen), total)
	}
	if r.Stats().CQOverflows == 0 {
		t.Fatal("overflow never observed")
	}
}

func TestRegisterFilesAndIOWQ(t *testing.T) {
	r := newTestRing(t, Params{Entries: 8})
	if err := r.RegisterFilesSparse(4); err != nil {
		t.Fatal(err)
	}
	a, b := tcpPair(t)
	if n, err := r.UpdateFiles(0, []int32{int32(a), int32(b)}); err != nil || n != 2 {
		t.Fatalf("UpdateFiles = %d, %v", n, err)
	}
	msg := []byte("fixed")
	r.GetSQE().SetFlags(SQEFixedFile).SetUserData(1).PrepSend(0, msg, unix.MSG_NOSIGNAL)
	if c := waitOne(t, r); c.Res != 5 {
		t.Fatalf("fixed-file send res %d", c.Res)
	}
	if err := r.UnregisterFiles(); err != nil {
		t.Fatal(err)
	}
	b0, u0, err := r.IOWQMaxWorkers(3, 5)
	if err != nil {
		t.Fatal(err)
	}
	b1, u1, err := r.IOWQMaxWorkers(0, 0)
	if err != nil || b1 != 3 || u1 != 5 {
		t.Fatalf("IOWQ max = %d,%d (was %d,%d), %v", b1, u1, b0, u0, err)
	}
	var set unix.CPUSet
	set.Set(0)
	if err := r.SetIOWQAffinity(&set); err != nil {
		t.Fatal(err)
	}
	if err := r.SetIOWQAffinity(nil); err != nil {
		t.Fatal(err)
	}
	efd, _ := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	defer unix.Close(efd)
	if err := r.RegisterEventfd(efd); err != nil {
		t.Fatal(err)
	}
	r.GetSQE().PrepNop()
	waitOne(t, r)
	var v [8]byte
	if _, err := unix.Read(efd, v[:]); err != nil {
		t.Fatalf("eventfd not signalled: %v", err)
	}
	if err := r.UnregisterEventfd(); err != nil {
		t.Fatal(err)
	}
}

func TestRegisteredRingFD(t *testing.T) {
	runtime_LockOSThread(t)
	r := newTestRing(t, Params{Entries: 8})
	if err := r.RegisterRingFD(); err != nil {
		t.Fatal(err)
	}
	r.GetSQE().PrepNop()
	waitOne(t, r)
}

func runtime_LockOSThread(t testing.TB) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
}

// TestMultishotRecvIncrementalBufRing: with IOU_PBUF_RING_INC (6.12+) small
// messages share one buffer, each CQE's data following the last one's, and
// a buffer comes back (no CQEFBufMore) only when it is used up; the bytes
// arrive in order, none lost.
func TestMultishotRecvIncrementalBufRing(t *testing.T) {
	r := newTestRing(t, Params{Entries: 16, CQEntries: 64})
	a, b := tcpPair(t)
	br, err := r.RegisterBufRingFlags(3, 2, 64, BufRingIncremental)
	if errors.Is(err, syscall.EINVAL) {
		t.Skip("no incremental buffer rings (Linux 6.12+):", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	if !br.Incremental() {
		t.Fatal("Incremental() = false")
	}
	arm := func() { r.GetSQE().SetUserData(5).PrepRecvMultishot(b, br.Group(), 0) }
	arm()
	var sent, got []byte
	bufMore, ids := 0, map[uint16]int{}
	for i := 0; len(sent) < 300; i++ {
		chunk := bytes.Repeat([]byte{byte('a' + i%26)}, 10)
		sent = append(sent, chunk...)
		if _, err := unix.Write(a, chunk); err != nil {
			t.Fatal(err)
		}
		// One CQE per write: wait for it before the next write.
		for len(got) < len(sent) {
			c := waitOne(t, r)
			if c.Res <= 0 {
				t.Fatalf("CQE %+v", c)
			}
			id, ok := c.BufferID()
			if !ok {
				t.Fatal("CQE without F_BUFFER")
			}
			ids[id]++
			data, done := br.Take(id, int(c.Res), c.Flags)
			got = append(got, data...)
			if c.Flags&CQEFBufMore != 0 {
				bufMore++
			}
			if done {
				br.Recycle(id)
				br.Commit()
			}
			if !c.More() {
				arm()
			}
		}
	}
	if !bytes.Equal(got, sent) {
		t.Fatalf("bytes lost or reordered:\n got %q\nwant %q", got, sent)
	}
	// 300 bytes through 2 buffers of 64: each buffer held several messages.
	if bufMore < 20 {
		t.Fatalf("%d CQEs with CQEFBufMore, want most of the 30 (buffers per id: %v)", bufMore, ids)
	}
}

// TestRecvBundleOutOfOrderRecycle checks Bundle against the kernel: a
// recv bundle (IORING_RECVSEND_BUNDLE, 6.10+) fills consecutive ring slots,
// and after buffers are recycled out of order those slots hold ids that are
// not consecutive; every round must still read back byte-exact. Some rounds
// first cut the head entry's length short, as kernels before "io_uring/kbuf:
// don't truncate end buffer for bundles" leave it after a bundle recv that
// was limited below one buffer and then got nothing: the kernel then puts
// fewer bytes in that buffer, and Bundle must follow the entry, not assume
// full buffers.
func TestRecvBundleOutOfOrderRecycle(t *testing.T) {
	r := newTestRing(t, Params{Entries: 16, CQEntries: 64})
	if r.FeatureBits()&FeatRecvSendBundle == 0 {
		t.Skip("kernel has no IORING_RECVSEND_BUNDLE (Linux 6.10+)")
	}
	a, b := tcpPair(t)
	const size, count = 16, 8
	br, err := r.RegisterBufRing(5, count, size)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	var head uint16 // ring slots the kernel has taken
	multi, cut := 0, 0
	for round := 0; round < 40; round++ {
		n := 1 + (round*37)%(4*size) // 1..64 bytes: up to 4 buffers
		sent := make([]byte, n)
		for i := range sent {
			sent[i] = byte(round*7 + i)
		}
		if _, err := unix.Write(a, sent); err != nil {
			t.Fatal(err)
		}
		if round%3 == 1 {
			// The kernel's cut: the head entry's length, short.
			e := unsafe.Add(unsafe.Pointer(&br.mem[0]), uintptr(head&uint16(br.mask))*16+8)
			*(*uint32)(e) = uint32(1 + round%(size-1))
			cut++
		}
		// A recv may take fewer bytes than are queued: read until all came.
		var got []byte
		for len(got) < n {
			sqe := r.GetSQE()
			sqe.SetUserData(1).PrepRecvSelect(b, br.Group(), 0)
			sqe.SetBundle()
			c := waitOne(t, r)
			if c.Res <= 0 || len(got)+int(c.Res) > n {
				t.Fatalf("round %d: res %d with %d of %d bytes read", round, c.Res, len(got), n)
			}
			first, ok := c.BufferID()
			if !ok {
				t.Fatal("CQE without F_BUFFER")
			}
			bufs := br.Bundle(first, int(c.Res), nil)
			if len(bufs) > 1 {
				multi++
			}
			for _, bb := range bufs {
				got = append(got, br.Buf(bb.ID, bb.Len)...)
			}
			head += uint16(len(bufs))
			for i := len(bufs) - 1; i >= 0; i-- { // reversed: slots get ids out of order
				br.Recycle(bufs[i].ID)
			}
			br.Commit()
		}
		if !bytes.Equal(got, sent) {
			t.Fatalf("round %d: got %v, want %v", round, got, sent)
		}
	}
	if multi == 0 || cut == 0 {
		t.Fatalf("%d CQEs carried more than one buffer, %d rounds cut the head entry: not what this test checks", multi, cut)
	}
}

// TestRecvDiscard: a recv with no buffer and MSG_TRUNC drops up to n queued
// bytes of a TCP socket, waits when none are queued, and reads 0 at the
// peer's FIN.
func TestRecvDiscard(t *testing.T) {
	r := newTestRing(t, Params{Entries: 8})
	a, b := tcpPair(t)
	if _, err := unix.Write(a, make([]byte, 100000)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	r.GetSQE().SetUserData(1).PrepRecvDiscard(b, 60000)
	if c := waitOne(t, r); c.Res != 60000 {
		t.Fatalf("discard of 60000: res %d", c.Res)
	}
	r.GetSQE().SetUserData(2).PrepRecvDiscard(b, 1<<20)
	if c := waitOne(t, r); c.Res != 40000 {
		t.Fatalf("discard of the rest: res %d, want 40000", c.Res)
	}
	if q, err := unix.IoctlGetInt(b, unix.SIOCINQ); err != nil || q != 0 {
		t.Fatalf("SIOCINQ after the discards: %d, %v", q, err)
	}
	r.GetSQE().SetUserData(3).PrepRecvDiscard(b, 1<<20)
	r.Submit()
	time.Sleep(10 * time.Millisecond)
	unix.Write(a, []byte("late"))
	if c := waitOne(t, r); c.Res != 4 {
		t.Fatalf("discard that waited: res %d, want 4", c.Res)
	}
	r.GetSQE().SetUserData(4).PrepRecvDiscard(b, 1<<20)
	r.Submit()
	unix.Shutdown(a, unix.SHUT_WR)
	if c := waitOne(t, r); c.Res != 0 {
		t.Fatalf("discard at the FIN: res %d, want 0", c.Res)
	}
}
