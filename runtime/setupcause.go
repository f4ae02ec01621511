package uringrt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/netpoll"
)

// Three different things make io_uring_setup(2) fail on a kernel that may
// well have io_uring, and the errno alone does not tell them apart:
//
//	cause                               errno          what the host shows
//	kernel older than 5.1 / no io_uring ENOSYS         uname release < 5.1 (or CONFIG_IO_URING=n)
//	sysctl kernel.io_uring_disabled     EPERM          /proc/sys/kernel/io_uring_disabled 1 or 2 (6.6+)
//	a seccomp filter (containers)       ENOSYS, EPERM  "Seccomp: 2" in /proc/self/status
//
// podman's default profile answers ENOSYS, Docker's EPERM, so an ENOSYS on
// a 5.1+ kernel under a seccomp filter is the filter, not the kernel.
// diagnoseSetup reads those facts (hostState) and names the cause and its
// fix; tests inject both the errno and the readings.

// hostState is what diagnosing a failed ring setup reads from the host.
type hostState struct {
	kernel   string // uname -r, e.g. "6.18.0"
	disabled int    // /proc/sys/kernel/io_uring_disabled: 0, 1, 2; -1 when absent (before 6.6)
	group    int    // /proc/sys/kernel/io_uring_group: a gid, -1 when absent or "-1" (no group)
	seccomp  int    // the Seccomp field of /proc/self/status: 0 none, 1 strict, 2 filter; -1 when absent
}

// readHostState reads the kernel release, the io_uring sysctls and this
// process's seccomp mode. Missing files read as -1.
func readHostState() hostState {
	h := hostState{kernel: netpoll.KernelRelease(), disabled: -1, group: -1, seccomp: -1}
	readInt := func(path string) int {
		b, err := os.ReadFile(path)
		if err != nil {
			return -1
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return -1
		}
		return v
	}
	h.disabled = readInt("/proc/sys/kernel/io_uring_disabled")
	h.group = readInt("/proc/sys/kernel/io_uring_group")
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		h.seccomp = seccompMode(b)
	}
	return h
}

// seccompMode returns the Seccomp field of a /proc/PID/status text, or -1.
func seccompMode(status []byte) int {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Seccomp:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// kernelAtLeast reports whether release ("6.18.0-rc1+") is major.minor or
// newer; an unparsable release counts as new enough (we cannot say it is
// too old).
func kernelAtLeast(release string, major, minor int) bool {
	num := func(s string) (int, string, bool) {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		n, err := strconv.Atoi(s[:i])
		return n, s[i:], err == nil
	}
	ma, rest, ok := num(release)
	if !ok || !strings.HasPrefix(rest, ".") {
		return true
	}
	mi, _, ok := num(rest[1:])
	if !ok {
		return true
	}
	return ma > major || ma == major && mi >= minor
}

// Fix texts, shared by the diagnosis and its tests.
const (
	fixSeccomp = "run with a seccomp profile that allows io_uring_setup, io_uring_enter and io_uring_register: " +
		"the project's deploy/seccomp-io_uring.json (podman/docker: --security-opt seccomp=deploy/seccomp-io_uring.json; " +
		"Kubernetes: seccompProfile type Localhost, see deploy/k8s)"
	fixKernel  = "upgrade to Linux 5.1+ (6.1+ recommended) built with CONFIG_IO_URING=y"
	fixStd     = "or use BackendStd"
	seccompTag = "a seccomp filter"
)

// diagnoseSetup names why a ring setup failed with errno on host h, and the
// fix. Errnos other than the three causes' get a generic answer (a
// shortage of descriptors or memory never comes here: setupFailure).
func diagnoseSetup(errno syscall.Errno, h hostState) string {
	filtered := h.seccomp == 2
	switch errno {
	case syscall.ENOSYS:
		switch {
		case !kernelAtLeast(h.kernel, 5, 1):
			return fmt.Sprintf("kernel %s is too old for io_uring (it came in Linux 5.1): %s; %s", h.kernel, fixKernel, fixStd)
		case filtered:
			return fmt.Sprintf("%s refused io_uring_setup with ENOSYS (podman's default profile does; kernel %s has io_uring): %s; %s",
				seccompTag, h.kernel, fixSeccomp, fixStd)
		default:
			return fmt.Sprintf("kernel %s was built without io_uring (CONFIG_IO_URING=n) and no seccomp filter is in place: %s; %s",
				h.kernel, fixKernel, fixStd)
		}
	case syscall.EPERM, syscall.EACCES:
		var causes []string
		switch h.disabled {
		case 2:
			causes = append(causes, "the sysctl kernel.io_uring_disabled=2 disables io_uring for every process: set it to 0 (sysctl -w kernel.io_uring_disabled=0)")
		case 1:
			g := "no group is set (kernel.io_uring_group=-1), so only CAP_SYS_ADMIN may"
			if h.group >= 0 {
				g = fmt.Sprintf("only members of kernel.io_uring_group (gid %d) and CAP_SYS_ADMIN may", h.group)
			}
			causes = append(causes, fmt.Sprintf("the sysctl kernel.io_uring_disabled=1 limits io_uring: %s create rings: add the user to that group, or set kernel.io_uring_disabled=0", g))
		}
		if filtered {
			causes = append(causes, fmt.Sprintf("%s refused io_uring_setup with %s (Docker's and containerd's default profiles do): %s", seccompTag, errnoName(errno), fixSeccomp))
		}
		if len(causes) == 0 {
			causes = append(causes, "io_uring is blocked by a security module or a policy this process cannot see "+
				"(kernel.io_uring_disabled and seccomp are not the cause here): check the LSM (SELinux, AppArmor) policy")
		}
		return strings.Join(causes, "; and ") + "; " + fixStd
	}
	return "use BackendAuto to fall back to Go's net, or BackendStd"
}

// noIOUringOn wraps a ring setup failure in ErrNoIOUring and appends the
// cause and fix diagnosed on host h, so that the error (and BackendAuto's
// warning) says what to change.
func noIOUringOn(err error, h hostState) error {
	var errno syscall.Errno
	errors.As(err, &errno)
	return fmt.Errorf("%w: %w (fix: %s)", ErrNoIOUring, err, diagnoseSetup(errno, h))
}

// ErrSetupResources is wrapped by New's error when setting up a loop (its
// ring, its eventfd, its buffers) ran out of descriptors (EMFILE: the
// process's RLIMIT_NOFILE; ENFILE: the system's fs.file-max) or memory
// (ENOMEM: memory, or RLIMIT_MEMLOCK on kernels before 5.12). io_uring is
// there but the process is short of something for the moment, so every
// Backend fails New rather than falling back to Go's net for the
// runtime's whole life: New (or the default runtime's next use) can be
// tried again once descriptors or memory are back. The errno stays
// reachable: errors.Is(err, syscall.EMFILE).
var ErrSetupResources = errors.New("uringrt: out of descriptors or memory setting up io_uring")

// resourceShortage reports whether errno says the process (or the system)
// is short of descriptors or memory, rather than io_uring being absent or
// blocked (ENOSYS, EPERM, EACCES: see diagnoseSetup).
func resourceShortage(errno syscall.Errno) bool {
	return errno == syscall.EMFILE || errno == syscall.ENFILE || errno == syscall.ENOMEM
}

// setupFailure wraps a failed ring or loop setup: a resource shortage in
// ErrSetupResources with what to free or raise, anything else in
// ErrNoIOUring with the cause and fix diagnosed on host().
func setupFailure(err error, host func() hostState) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && resourceShortage(errno) {
		var fix string
		switch errno {
		case syscall.EMFILE:
			fix = "the process is at its descriptor limit (RLIMIT_NOFILE); each loop needs a ring and an eventfd: close descriptors or raise the limit (ulimit -n), then try again"
		case syscall.ENFILE:
			fix = "the system is out of descriptors (fs.file-max): close descriptors or raise fs.file-max, then try again"
		default:
			fix = "free memory, raise RLIMIT_MEMLOCK (kernels before 5.12 charge rings to it) or lower Config.Loops or Config.RingEntries, then try again"
		}
		return fmt.Errorf("%w: %w (%s; io_uring itself is available; fix: %s)", ErrSetupResources, err, unix.ErrnoName(errno), fix)
	}
	return noIOUringOn(err, host())
}

// Features is what the running kernel's io_uring offers, as probed once:
// the kernel release, the setup flags a ring takes
// (SINGLE_ISSUER|DEFER_TASKRUN needs 6.1+), IORING_FEAT_* bits, the
// supported opcodes (IORING_REGISTER_PROBE), provided buffer rings (5.19+),
// multishot accept/recv (5.19+/6.0+), the enter min-wait (6.12+) and
// IORING_REGISTER_IOWQ_MAX_WORKERS (5.15+). Its String method renders it
// on one line ("kernel=... setup=... ops=...").
type Features = netpoll.Features

// Probe sets up a small io_uring ring, probes the kernel's features and
// closes the ring, as New does at start; it starts no loop. It fails with
// an error wrapping ErrNoIOUring and the setup errno (errors.Is(err,
// syscall.ENOSYS), os.ErrPermission for EPERM) whose text names the cause
// (kernel older than 5.1, the sysctl kernel.io_uring_disabled, or a seccomp
// filter) and its fix, or, when the process is out of descriptors or
// memory, an error wrapping ErrSetupResources and EMFILE, ENFILE or ENOMEM;
// the returned Features then hold only the kernel release.
func Probe() (Features, error) {
	return probeWith(netpoll.New, readHostState)
}
