package uringrt

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// MaxLoops is the most event loops a Runtime runs (Config.Loops). Each loop
// is a goroutine (locked to an OS thread of its own with
// Config.LockedLoops), an io_uring ring, an eventfd and the ring's memory (SQ and CQ arrays and, with provided buffers,
// Buffers x BufferSize bytes), so far fewer loops than this already cost
// more than they serve; one per CPU (the default, GOMAXPROCS) is the
// design point.
const MaxLoops = 1024

// ErrConfig is wrapped by New's error for a Config field out of range.
var ErrConfig = errors.New("uringrt: invalid Config")

// validate rejects values that are neither zero (the default) nor in range,
// rather than silently replacing them.
func validate(cfg *Config) error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: %s = %v: %s", ErrConfig, field, v, want)
	}
	switch {
	case cfg.Loops < 0:
		return bad("Loops", cfg.Loops, "want >= 0 (0 = GOMAXPROCS)")
	case cfg.Loops > MaxLoops:
		return bad("Loops", cfg.Loops, fmt.Sprintf("want at most MaxLoops (%d) loops; one per CPU is the design point", MaxLoops))
	case cfg.Workers < 0:
		return bad("Workers", cfg.Workers, "want >= 0 (0 = DefaultWorkers)")
	case cfg.MaxConns < 0:
		return bad("MaxConns", cfg.MaxConns, "want >= 0 (0 = no cap)")
	case cfg.MaxBufferedBytes < -1:
		return bad("MaxBufferedBytes", cfg.MaxBufferedBytes, "want >= 0 bytes (0 = default), or -1 (no cap)")
	case cfg.IdleTimeout < 0 || cfg.IdleTimeout > 0 && cfg.IdleTimeout < 10*time.Millisecond:
		return bad("IdleTimeout", cfg.IdleTimeout, "want 0 (never) or at least 10ms")
	case cfg.MaxWriteBuffer < 0:
		return bad("MaxWriteBuffer", cfg.MaxWriteBuffer, "want >= 0 bytes (0 = default)")
	case cfg.WaitLatency < 0:
		return bad("WaitLatency", cfg.WaitLatency, "want >= 0 (0 = DefaultWaitLatency)")
	case cfg.IdlePoll < 0 || cfg.IdlePoll > time.Second:
		return bad("IdlePoll", cfg.IdlePoll, "want 0 (off) up to 1s")
	case cfg.RingEntries > 32768:
		return bad("RingEntries", cfg.RingEntries, "want <= 32768 SQEs")
	case cfg.BufferSize < 0:
		return bad("BufferSize", cfg.BufferSize, "want >= 0 bytes")
	case cfg.Buffers < 0 || cfg.Buffers > 32768 || cfg.Buffers&(cfg.Buffers-1) != 0:
		return bad("Buffers", cfg.Buffers, "want 0 or a power of two up to 32768")
	case cfg.Backend < BackendAuto || cfg.Backend > BackendStd:
		return bad("Backend", cfg.Backend, "want BackendAuto, BackendUring or BackendStd")
	case cfg.Pollable < experiment.PollHybrid || cfg.Pollable > experiment.PollBlocking:
		return bad("Pollable", cfg.Pollable, "want experiment.PollHybrid, experiment.PollRing, experiment.PollAsync or experiment.PollBlocking")
	case cfg.WaitBatch < experiment.WaitBatchOn || cfg.WaitBatch > experiment.WaitBatchOff:
		return bad("WaitBatch", cfg.WaitBatch, "want experiment.WaitBatchOn or experiment.WaitBatchOff")
	}
	return nil
}

func applyDefaults(cfg *Config) {
	if cfg.Loops <= 0 {
		cfg.Loops = runtime.GOMAXPROCS(0)
	}
	if cfg.RingEntries == 0 {
		cfg.RingEntries = DefaultRingEntries
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.WaitLatency <= 0 {
		cfg.WaitLatency = DefaultWaitLatency
	}
	if cfg.MaxWriteBuffer <= 0 {
		cfg.MaxWriteBuffer = DefaultMaxWriteBuffer
	}
	if cfg.MaxBufferedBytes == 0 {
		cfg.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if cfg.CloseTimeout == 0 {
		cfg.CloseTimeout = DefaultCloseTimeout
	}
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultBufferSize
	}
	if cfg.Buffers <= 0 || cfg.Buffers&(cfg.Buffers-1) != 0 {
		cfg.Buffers = DefaultBuffers
	}
}
