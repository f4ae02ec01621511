package uringrt

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestSetupCauses fakes each reason io_uring_setup fails (the errno through
// the newRing hook, the host's kernel release, io_uring sysctls and seccomp
// mode through the host hook) and checks that New's error (BackendUring)
// and BackendAuto's fallback reason name that cause and its fix, and not
// another cause's. Before the diagnosis, ENOSYS under a seccomp filter on a
// 6.x kernel said "this kernel has no io_uring (needs Linux 5.1+ ...)".
func TestSetupCauses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
		host  hostState
		want  []string // substrings the error must contain
		not   []string // substrings it must not contain
	}{
		{"podman seccomp ENOSYS", syscall.ENOSYS, hostState{kernel: "6.18.0", disabled: 0, group: -1, seccomp: 2},
			[]string{"seccomp filter", "ENOSYS", "deploy/seccomp-io_uring.json", "--security-opt seccomp=", "Localhost", "kernel 6.18.0 has io_uring"},
			[]string{"too old", "CONFIG_IO_URING=n", "io_uring_disabled"}},
		{"docker seccomp EPERM", syscall.EPERM, hostState{kernel: "6.8.0-51-generic", disabled: 0, group: -1, seccomp: 2},
			[]string{"seccomp filter", "EPERM", "deploy/seccomp-io_uring.json"},
			[]string{"too old", "io_uring_disabled="}},
		{"old kernel", syscall.ENOSYS, hostState{kernel: "4.19.0-27-amd64", disabled: -1, group: -1, seccomp: 0},
			[]string{"kernel 4.19.0-27-amd64 is too old", "5.1", "upgrade"},
			[]string{"seccomp", "io_uring_disabled"}},
		{"old kernel in a container", syscall.ENOSYS, hostState{kernel: "5.0.21", disabled: -1, group: -1, seccomp: 2},
			[]string{"too old", "5.1"},
			[]string{"seccomp filter"}},
		{"no CONFIG_IO_URING", syscall.ENOSYS, hostState{kernel: "6.1.0", disabled: -1, group: -1, seccomp: 0},
			[]string{"CONFIG_IO_URING=n", "6.1.0"},
			[]string{"too old", "seccomp filter refused"}},
		{"sysctl disabled=2", syscall.EPERM, hostState{kernel: "6.18.0", disabled: 2, group: -1, seccomp: 0},
			[]string{"kernel.io_uring_disabled=2", "every process", "kernel.io_uring_disabled=0"},
			[]string{"seccomp filter", "too old"}},
		{"sysctl disabled=1 with group", syscall.EPERM, hostState{kernel: "6.18.0", disabled: 1, group: 1234, seccomp: 0},
			[]string{"kernel.io_uring_disabled=1", "kernel.io_uring_group (gid 1234)", "add the user"},
			[]string{"seccomp filter", "too old"}},
		{"sysctl disabled=1 without group", syscall.EACCES, hostState{kernel: "6.18.0", disabled: 1, group: -1, seccomp: 0},
			[]string{"kernel.io_uring_disabled=1", "kernel.io_uring_group=-1", "CAP_SYS_ADMIN"},
			[]string{"seccomp filter"}},
		{"sysctl and seccomp", syscall.EPERM, hostState{kernel: "6.18.0", disabled: 2, group: -1, seccomp: 2},
			[]string{"kernel.io_uring_disabled=2", "seccomp filter", "deploy/seccomp-io_uring.json"}, nil},
		{"EPERM neither", syscall.EPERM, hostState{kernel: "6.18.0", disabled: 0, group: -1, seccomp: 0},
			[]string{"security module", "not the cause"},
			[]string{"seccomp filter refused", "too old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := func() hostState { return tc.host }
			check := func(what, msg string) {
				t.Helper()
				for _, w := range append(tc.want, "BackendStd", tc.errno.Error()) {
					if !strings.Contains(msg, w) {
						t.Errorf("%s %q does not contain %q", what, msg, w)
					}
				}
				for _, n := range tc.not {
					if strings.Contains(msg, n) {
						t.Errorf("%s %q names a cause that is not this one: %q", what, msg, n)
					}
				}
			}
			rt, err := newRuntimeWith(Config{Backend: BackendUring}, failSetup(tc.errno), host)
			if err == nil {
				rt.Close()
				t.Fatal("BackendUring: New succeeded without io_uring")
			}
			if !errors.Is(err, ErrNoIOUring) || !errors.Is(err, tc.errno) {
				t.Errorf("error %v does not wrap ErrNoIOUring and %v", err, tc.errno)
			}
			check("BackendUring error", err.Error())
			logger, _ := logBuffer()
			rt, err = newRuntimeWith(Config{Logger: logger}, failSetup(tc.errno), host)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			check("BackendAuto fallback reason", rt.FallbackReason())
		})
	}
}

func TestSeccompMode(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   int
	}{
		{"Name:\tx\nSeccomp:\t2\nSeccomp_filters:\t1\n", 2},
		{"Name:\tx\nSeccomp:\t0\n", 0},
		{"Name:\tx\n", -1},
		{"Seccomp:\tbad\n", -1},
	} {
		if got := seccompMode([]byte(tc.status)); got != tc.want {
			t.Errorf("seccompMode(%q) = %d, want %d", tc.status, got, tc.want)
		}
	}
	// This process's own status parses.
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	if m := seccompMode(b); m < 0 || m > 2 {
		t.Errorf("seccompMode(/proc/self/status) = %d", m)
	}
}

func TestKernelAtLeast(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{"5.1.0", true}, {"5.0.21", false}, {"4.19.0-27-amd64", false}, {"6.18.0", true},
		{"5.10", true}, {"3.10.0-1160.el7.x86_64", false}, {"unknown", true}, {"10.0", true},
	} {
		if got := kernelAtLeast(tc.rel, 5, 1); got != tc.want {
			t.Errorf("kernelAtLeast(%q, 5, 1) = %v, want %v", tc.rel, got, tc.want)
		}
	}
}

// TestProbe: the public probe works on this kernel (CI has io_uring) or
// fails with a diagnosed ErrNoIOUring.
func TestProbe(t *testing.T) {
	f, err := Probe()
	if err != nil {
		if !errors.Is(err, ErrNoIOUring) || !strings.Contains(err.Error(), "fix:") {
			t.Fatalf("Probe: %v, want an ErrNoIOUring naming the fix", err)
		}
		t.Skipf("no io_uring here: %v", err)
	}
	if f.Kernel == "" || f.Ops.Last == 0 || !strings.Contains(f.String(), "ops=") {
		t.Errorf("Probe() = %v: no kernel release or opcodes", f)
	}
}
