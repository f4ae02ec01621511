// Package netpoll is uringrt's io_uring ring: setup with a feature probe,
// SQE preparation for socket operations, submit-and-wait in one enter, CQE
// reaping in batches, provided buffer rings and the register calls. It is
// written directly on golang.org/x/sys/unix (io_uring_setup, io_uring_enter,
// io_uring_register, mmap) and knows nothing of net.Conn.
//
//	         user space (one loop goroutine, locked to its OS thread)
//	 GetSQE + Prep*            SubmitAndWait(minComplete, timeout, minWait)      Reap(dst)
//	      |                                   |                                     ^
//	      v                                   v                                     |
//	+---------------------+        +---------------------+          +-----------------------+
//	| SQE array (mmap)    |        |   io_uring_enter    |          | CQ ring (mmap)        |
//	| SQ ring: head tail  | -----> |  submit to_submit,  | -------> | head tail cqes[]      |
//	|  (array = identity) |  tail  |  run task_work,     |  CQEs    | F_MORE F_BUFFER ...   |
//	+---------------------+  store |  wait min_complete  |  posted  +-----------------------+
//	                               +---------------------+               |  overflow (NODROP)
//	          provided buffer ring (mmap, outside the Go heap): the kernel picks
//	          a buffer per recv; BufRing.Recycle + Commit hand it back.
//
// Threading: a Ring is driven by one goroutine. A ring made with
// SetupSingleIssuer must be entered from the thread that made it (the kernel
// answers EEXIST otherwise), so its goroutine calls runtime.LockOSThread
// before New. With SetupDeferTaskrun (6.1+) completions are produced only
// when that thread enters with GETEVENTS: a wait for minComplete CQEs then
// runs the batch of task_work and wakes the thread once.
//
// Go's scheduler: an enter that cannot sleep (a submission, a flush with
// minComplete 0) is a raw system call that keeps the goroutine's P; only a
// wait that can sleep goes through Syscall6, where sysmon may hand the P to
// another thread. SubmitAndWait therefore submits first and sleeps in a
// second enter only if the CQEs it needs are not ready (SetRawSubmitMax
// bounds how large a raw submission may be).
//
// Memory: the kernel reads or writes the memory an SQE points at until the
// CQE arrives. Go's heap does not move objects, so a buffer stays valid while
// the caller keeps a reference to it; callers (uringrt's runtime) hold every
// in-flight buffer in the operation's record until its CQE is reaped.
//
// Kernel versions: the ring needs Linux 5.1; uringrt's loop wants 5.19 (buffer
// rings, multishot accept), 6.0 (multishot recv) and 6.1 (DEFER_TASKRUN);
// 6.12 adds the enter min-wait. Each identifier says what it needs; Features
// and ProbeFeatures say what this kernel has.
package netpoll
