package uringrt

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
)

// A PacketConn under Config.UDPRecvMultishot receives through a udpRing:
// one multishot IORING_OP_RECVMSG selecting buffers from a provided buffer
// ring of the PacketConn's own. The loop queues each CQE (buffer id and
// length, or an error) in arrival order and wakes the parked reader; the
// reader copies the datagram out and gives the buffer back to the kernel
// itself (the buffer ring's tail is written only by the reader, under the
// fd's read lock). When the multishot ends (ENOBUFS while every buffer
// waits to be read, or an error) the reader re-arms it once it has drained
// the queue, so datagrams wait in the socket meanwhile and none is lost.

const (
	udpRingBufs    = 16
	udpRingName    = 128 // room for any sockaddr (RawSockaddrAny is 112 bytes)
	udpRingControl = 256 // room for control messages (PKTINFO, TOS, UDP_GRO, ...)
	udpRingHdr     = 16  // struct io_uring_recvmsg_out
	udpRingBufSize = udpRingHdr + udpRingName + udpRingControl + 65536
)

type udpRecvd struct {
	buf   uint16
	n     int32         // bytes of the buffer used (CQE res)
	errno syscall.Errno // a failed recvmsg, reported in order
}

type udpRing struct {
	fd  *netFD
	br  *netpoll.BufRing
	msg unix.Msghdr // the template: name and control room
	op  op

	mu    sync.Mutex
	ready []udpRecvd // completed, oldest first
	head  int
	ended atomic.Bool // the multishot is not armed: the reader re-arms it
}

// startUDPRing registers a buffer ring on fd's loop and arms the multishot
// recvmsg. It returns nil when the kernel cannot (the caller keeps the
// nonblock path).
func startUDPRing(fd *netFD) *udpRing {
	cfg := &fd.rt.cfg
	if !fd.rt.features.MultishotRecv || !fd.rt.features.BufRing || cfg.DisableMultishot || cfg.DisableBufRing {
		return nil
	}
	ur := &udpRing{fd: fd}
	ur.msg.Namelen = udpRingName
	ur.msg.SetControllen(udpRingControl)
	ur.op = op{kind: opUDPRecv, fd: fd.fd, nfd: fd, ur: ur}
	done := make(chan error, 1)
	l := fd.l
	l.post(request{kind: reqFunc, fn: func() {
		var err error
		for try := 0; try < 4; try++ { // a group id still taken after wrapping: the next one
			l.udp.nextBgid++
			if l.udp.nextBgid == 0 {
				l.udp.nextBgid = 1 // 0 is the loop's callback group
			}
			ur.br, err = l.ring.RegisterBufRing(l.udp.nextBgid, udpRingBufs, udpRingBufSize)
			if err == nil || !errors.Is(err, syscall.EEXIST) {
				break
			}
		}
		if err == nil {
			l.arm(&ur.op)
		}
		done <- err
	}})
	select {
	case err := <-done:
		if err != nil {
			fd.rt.logger.Debug("UDP multishot recvmsg unavailable; using nonblock recvmsg", "err", err)
			return nil
		}
	case <-l.done:
		return nil
	}
	return ur
}

// prep fills the SQE of the multishot recvmsg (on the loop).
func (ur *udpRing) prep(sqe *netpoll.SQE) {
	sqe.PrepRecvmsgMultishot(ur.fd.fd, unsafe.Pointer(&ur.msg), ur.br.Group(), 0)
}

// onCQE queues one completion and wakes the reader (on the loop).
func (ur *udpRing) onCQE(l *loop, o *op) {
	var r udpRecvd
	if o.res < 0 {
		r.errno = ioErrno(o.res)
	} else {
		if o.flags&netpoll.CQEFBuffer == 0 {
			r.errno = syscall.EIO // a completion without a buffer: never for recvmsg
		}
		r.buf, r.n = uint16(o.flags>>16), o.res
	}
	switch r.errno {
	case syscall.ENOBUFS:
		l.stats.enobufs.Add(1) // uringrt_buffer_ring_exhausted_total
	case syscall.EAGAIN:
		l.stats.retriedEAGAIN.Add(1) // uringrt_io_retried_eagain_total
	}
	if r.errno != syscall.ENOBUFS && r.errno != syscall.ECANCELED && r.errno != syscall.EAGAIN {
		// ENOBUFS: every buffer waits to be read; the datagrams wait in
		// the socket until the reader re-arms. ECANCELED: Close.
		// EAGAIN: a retry from an io-wq worker found the nonblocking
		// socket empty; the reader re-arms, as after ENOBUFS.
		ur.mu.Lock()
		ur.ready = append(ur.ready, r)
		ur.mu.Unlock()
	}
	if !o.armed {
		ur.ended.Store(true)
	}
	l.wakes = append(l.wakes, &ur.fd.rd)
}

// pop takes the oldest completion.
func (ur *udpRing) pop() (udpRecvd, bool) {
	ur.mu.Lock()
	defer ur.mu.Unlock()
	if ur.head == len(ur.ready) {
		ur.ready, ur.head = ur.ready[:0], 0
		return udpRecvd{}, false
	}
	r := ur.ready[ur.head]
	ur.head++
	return r, true
}

// rearm arms the multishot again after it ended (reader, queue drained).
func (ur *udpRing) rearm() {
	if ur.ended.Load() && ur.ended.CompareAndSwap(true, false) {
		ur.fd.l.post(request{kind: reqArm, op: &ur.op})
	}
}

// copyOut copies the datagram of buffer r into p, oob and from as
// recvmsg(2) would, and gives the buffer back to the kernel.
func (ur *udpRing) copyOut(r udpRecvd, p, oob []byte, from *unix.RawSockaddrAny) (n, oobn, flags int) {
	b := ur.br.Buf(r.buf, int(r.n))
	namelen := int(binary.NativeEndian.Uint32(b[0:]))
	controllen := int(binary.NativeEndian.Uint32(b[4:]))
	payloadlen := int(binary.NativeEndian.Uint32(b[8:]))
	flags = int(binary.NativeEndian.Uint32(b[12:]))
	if from != nil {
		*from = unix.RawSockaddrAny{}
		nb := (*[unsafe.Sizeof(*from)]byte)(unsafe.Pointer(from))
		copy(nb[:], b[udpRingHdr:udpRingHdr+min(namelen, udpRingName)])
	}
	ctl := b[udpRingHdr+udpRingName:]
	oobn, trunc := copyControl(oob, ctl[:min(controllen, udpRingControl)])
	if trunc {
		flags |= unix.MSG_CTRUNC
	}
	payload := b[udpRingHdr+udpRingName+udpRingControl:]
	n = copy(p, payload)
	if n < payloadlen {
		flags |= unix.MSG_TRUNC
	}
	ur.br.Recycle(r.buf)
	ur.br.Commit()
	return n, oobn, flags
}

// close releases the buffer ring once fd is closed (no op of it in flight).
func (ur *udpRing) close() {
	l := ur.fd.l
	done := make(chan struct{})
	l.post(request{kind: reqFunc, fn: func() { ur.br.Close(); close(done) }})
	select {
	case <-done:
	case <-l.done: // the loop stopped (its ring is closed): unmap here
		select {
		case <-done:
		default:
			ur.br.Close()
		}
	}
}

// copyControl copies the control messages src (whole, as the kernel wrote
// them into the provided buffer) into dst as recvmsg(2) writes them into a
// msg_control of len(dst) bytes (the kernel's put_cmsg): each message
// whole with its alignment padding while it fits; the first that does not
// fit cut to the room left, its cmsg_len lowered to the bytes copied, when
// at least its header fits, and none after it. n is the msg_controllen
// recvmsg would return; trunc is MSG_CTRUNC. The result parses with
// syscall.ParseSocketControlMessage, as Go's *net.UDPConn's does.
func copyControl(dst, src []byte) (n int, trunc bool) {
	const hdrLen = unix.SizeofCmsghdr
	for off := 0; off+hdrLen <= len(src); {
		var h unix.Cmsghdr
		copy((*[hdrLen]byte)(unsafe.Pointer(&h))[:], src[off:])
		l := int(h.Len)
		if l < hdrLen || l > len(src)-off {
			break // not the kernel's: stop at the last whole message
		}
		room := len(dst) - n
		if room < hdrLen {
			return n, true
		}
		cmlen := l
		if room < cmlen {
			trunc, cmlen = true, room
		}
		h.SetLen(cmlen)
		copy(dst[n:], (*[hdrLen]byte)(unsafe.Pointer(&h))[:])
		copy(dst[n+hdrLen:n+cmlen], src[off+hdrLen:])
		n += min(cmsgAlign(l), room)
		if trunc {
			return n, true
		}
		off += cmsgAlign(l)
	}
	return n, false
}

// cmsgAlign rounds a control message length up to the kernel's alignment
// (CMSG_ALIGN: the size of a long).
func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}
