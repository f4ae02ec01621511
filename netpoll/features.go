package netpoll

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Features is what this kernel offers, as probed once at start.
type Features struct {
	// Kernel is the running kernel's release (uname -r).
	Kernel string
	// SetupFlags are the setup flags a ring took when asked for
	// SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG with the fallback chain.
	SetupFlags SetupFlags
	// Bits are the IORING_FEAT_* bits.
	Bits FeatureFlags
	// Ops are the supported opcodes (IORING_REGISTER_PROBE).
	Ops OpSet
	// BufRing reports provided buffer rings (IORING_REGISTER_PBUF_RING, 5.19+).
	BufRing bool
	// MultishotAccept and MultishotRecv report the multishot variants
	// (5.19+ and 6.0+); approximated from BufRing and the CQE_SKIP feature
	// era, as the kernel has no probe for ioprio flags.
	MultishotAccept, MultishotRecv bool
	// MinWait reports the enter min-wait timeout (FeatMinTimeout, 6.12+).
	MinWait bool
	// IOWQMaxWorkers reports IORING_REGISTER_IOWQ_MAX_WORKERS (5.15+).
	IOWQMaxWorkers bool
}

// ProbeFeatures sets up a small ring, probes it and closes it. It fails with
// the setup error when io_uring is unavailable (see New for the errnos), and
// with the register error when a probe fails for a reason other than the
// kernel lacking the feature (an error matching errors.ErrUnsupported leaves
// that feature false). The ring is made with SetupSingleIssuer, whose
// register calls the kernel refuses (EEXIST) from any thread but the one that
// made it, so the calling goroutine stays locked to its thread throughout.
func ProbeFeatures() (Features, error) {
	// Without the lock a goroutine moved to another thread between setup and
	// register got EEXIST, and the features read as "no opcodes".
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := Features{Kernel: KernelRelease()}
	r, err := New(Params{Entries: 8, Flags: SetupSingleIssuer | SetupDeferTaskrun | SetupTaskrunFlag, Fallback: true})
	if err != nil {
		return f, err
	}
	defer r.Close()
	f.SetupFlags = r.Flags()
	f.Bits = r.FeatureBits()
	ops, err := probeRing(r)
	if ok, err := probed(err); err != nil {
		return f, err
	} else if ok {
		f.Ops = ops
	}
	f.MinWait = f.Bits&FeatMinTimeout != 0
	br, err := r.RegisterBufRing(0, 1, 64)
	if ok, err := probed(err); err != nil {
		return f, err
	} else if ok {
		f.BufRing = true
		br.Close()
	}
	// Multishot accept came with 5.19 (buffer rings); multishot recv with
	// 6.0 (SEND_ZC appeared in the same release).
	f.MultishotAccept = f.BufRing
	f.MultishotRecv = f.BufRing && f.Ops.Has(OpSendZC)
	_, _, err = r.IOWQMaxWorkers(0, 0)
	if f.IOWQMaxWorkers, err = probed(err); err != nil {
		return f, err
	}
	return f, nil
}

// probeRing is Ring.Probe; tests replace it to force the failure path.
var probeRing = (*Ring).Probe

// probed sorts a feature probe's error: nil means the feature is there, an
// error matching errors.ErrUnsupported means it is not, and any other error
// is a failed probe the caller reports.
func probed(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errors.ErrUnsupported):
		return false, nil
	default:
		return false, err
	}
}

// String renders the features for a log line or `-version`.
func (f Features) String() string {
	var ops []string
	for op := Opcode(0); op <= f.Ops.Last && op < opLast; op++ {
		if f.Ops.Has(op) {
			if _, named := opNames[op]; named {
				ops = append(ops, op.String())
			}
		}
	}
	return fmt.Sprintf("kernel=%s setup=%v features=%v buf_ring=%v multishot_accept=%v multishot_recv=%v min_wait=%v iowq_max_workers=%v ops=%s",
		f.Kernel, f.SetupFlags, f.Bits, f.BufRing, f.MultishotAccept, f.MultishotRecv, f.MinWait, f.IOWQMaxWorkers, strings.Join(ops, ","))
}

// KernelRelease returns uname(2)'s release string ("6.18.0"), or "unknown".
func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}
