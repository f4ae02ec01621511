package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of the times in /proc/PID/stat (USER_HZ, 100 on Linux).
const userHZ = 100

// procSample is a server's CPU time and context switches at one instant.
type procSample struct {
	cpu   time.Duration // utime+stime of all threads
	ctxsw int64         // voluntary+nonvoluntary switches of the live threads
}

// readProc samples process pid. CPU time comes from /proc/PID/stat
// (utime+stime, whole process). Context switches come from
// /proc/PID/task/*/status, because /proc/PID/status counts only the main
// thread's; if the task directory cannot be read, /proc/PID/status is used.
func readProc(pid int) (procSample, error) {
	var s procSample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the command name, which is in parentheses and may contain
	// spaces: state is field 3, utime 14 and stime 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	s.cpu = time.Duration(utime+stime) * time.Second / userHZ
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if len(files) == 0 {
		files = []string{fmt.Sprintf("/proc/%d/status", pid)}
	}
	for _, name := range files {
		n, err := readCtxsw(name)
		if err != nil && !os.IsNotExist(err) { // a thread may exit meanwhile
			return s, err
		}
		s.ctxsw += n
	}
	return s, nil
}

// readCtxsw sums voluntary_ctxt_switches and nonvoluntary_ctxt_switches of
// one status file.
func readCtxsw(name string) (int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var sum int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, ":"); ok &&
			(k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %v", name, err)
			}
			sum += n
		}
	}
	return sum, sc.Err()
}

// selfCPU returns the user+system CPU time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// raiseNoFile raises the soft RLIMIT_NOFILE to the hard limit.
func raiseNoFile() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= lim.Max {
		return nil
	}
	lim.Cur = lim.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}
