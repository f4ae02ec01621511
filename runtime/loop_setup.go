package uringrt

import (
	"errors"
	"runtime"

	"github.com/uringrt/uringrt/netpoll"
	"github.com/uringrt/uringrt/runtime/experiment"
)

// A loop's start and end: its goroutine (locked to a thread, or parked in
// Go's netpoller), its ring and what is registered with it, and teardown.
// startLoop starts the loop goroutine (locked to its thread with
// Config.LockedLoops), which creates the ring and runs the loop.
func startLoop(rt *Runtime, id int) (*loop, error) {
	l := &loop{id: id, rt: rt, done: make(chan struct{})}
	l.initCB()
	errc := make(chan error, 1)
	goWait := !rt.cfg.LockedLoops
	go func() {
		if !goWait {
			runtime.LockOSThread() // never unlocked: the thread exits with the loop
			l.runq = newRunnableProbe()
		}
		if err := l.setup(goWait); err != nil {
			errc <- err
			close(l.done)
			return
		}
		errc <- nil
		l.run()
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return l, nil
}

func (l *loop) setup(goWait bool) error {
	cfg := &l.rt.cfg
	flags := netpoll.SetupSingleIssuer | netpoll.SetupDeferTaskrun | netpoll.SetupTaskrunFlag
	if cfg.DisableDeferTaskrun || cfg.WaitBatch == experiment.WaitBatchOff || goWait {
		// Without DEFER_TASKRUN the kernel runs completion task_work as
		// it comes (COOP_TASKRUN): the comparison baseline for batching.
		flags = netpoll.SetupCoopTaskrun | netpoll.SetupTaskrunFlag
	}
	entries := cfg.RingEntries
	ring, err := l.rt.newRing(netpoll.Params{Entries: entries, CQEntries: entries * 4, Flags: flags | netpoll.SetupClamp, Fallback: true})
	if err != nil {
		return err
	}
	l.ring = ring
	if goWait {
		if err := l.setupGoWait(); err != nil {
			ring.Close()
			return err
		}
	} else if err := ring.RegisterRingFD(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		l.rt.logger.Debug("register ring fd", "err", err)
	}
	if cfg.IOWQMaxWorkers > 0 {
		if _, _, err := ring.IOWQMaxWorkers(cfg.IOWQMaxWorkers, cfg.IOWQMaxWorkers); err != nil {
			ring.Close()
			return err
		}
	}
	if l.rt.useBufRing {
		br, err := registerBufRing(ring, cfg)
		if err != nil {
			l.rt.logger.Warn("provided buffer ring unavailable; callback API uses single-shot recv", "err", err)
		} else {
			l.bufRing = br
			// Multishot only: a single-shot bundle that fills its
			// buffers retries once for what the socket still holds
			// (Linux 6.12+), past its length, so a pause could overshoot
			// by a whole receive queue; a multishot arm's byte limit
			// (recvLimit) also caps that retry.
			l.bundles = !cfg.DisableRecvBundles && !cfg.DisableMultishot && !br.Incremental() &&
				l.rt.features.Bits&netpoll.FeatRecvSendBundle != 0
			if !cfg.DisableBufferLending && !br.Incremental() {
				l.lendCap = int(br.Count()) / 4 // lend.go
				l.ringMem = br.Span(0, int(br.Count()*br.Size()))
			}
		}
	}
	if !cfg.DisableFixedFiles {
		if t, err := ring.RegisterFileTable(fixedFileSlots); err == nil {
			l.files = t
		}
	}
	w, err := netpoll.NewEventfdWake()
	if err != nil {
		ring.Close()
		return err
	}
	l.wakeFD = w
	l.cqes = make([]netpoll.CQE, 256)
	l.slots = make([]*op, 0, 1024)
	l.wakeOp = op{kind: opWake, fd: w.Fd()}
	l.arm(&l.wakeOp)
	return nil
}

// fixedFileSlots is the size of each loop's sparse registered file table.
const fixedFileSlots = 1 << 16

// fixedFile registers fd in a free slot of the loop's file table (one
// IORING_REGISTER_FILES_UPDATE2 per connection, not per op).
func (l *loop) fixedFile(fd int) (int32, bool) {
	if l.files == nil {
		return -1, false
	}
	return l.files.Add(fd)
}

// releaseFixedFile clears a slot once no op uses it.
func (l *loop) releaseFixedFile(slot int32) { l.files.Remove(slot) }

// stop begins teardown: cancel every op; run exits once they completed.
func (l *loop) stop() {
	if l.stopping {
		return
	}
	l.stopping = true
	l.stopCB()
	sqe := l.getSQE()
	sqe.PrepCancelAll()
	sqe.Flags |= netpoll.SQECQESkipSuccess
}

func (l *loop) teardown() {
	if l.bufRing != nil {
		l.bufRing.Close()
	}
	l.closeGoWait()
	l.ring.Close()
	l.wakeFD.Close()
}
