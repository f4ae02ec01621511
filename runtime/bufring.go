package uringrt

import (
	"errors"
	"syscall"

	"github.com/uringrt/uringrt/netpoll"
)

// registerBufRing registers a loop's provided buffer ring (group 0):
// incrementally consumed (IOU_PBUF_RING_INC, Linux 6.12+) when
// cfg.IncrementalBuffers and the kernel takes it, else whole-buffer.
// With the default sizes an incremental ring has DefaultIncBuffers buffers
// of DefaultIncBufferSize bytes, so one recv CQE carries up to 32 KiB of a
// stream, where a whole-buffer ring of 4 KiB buffers needs one CQE per 4 KiB.
func registerBufRing(ring *netpoll.Ring, cfg *Config) (*netpoll.BufRing, error) {
	if cfg.IncrementalBuffers {
		size, count := cfg.BufferSize, cfg.Buffers
		if size == DefaultBufferSize && count == DefaultBuffers {
			size, count = DefaultIncBufferSize, DefaultIncBuffers
		}
		br, err := ring.RegisterBufRingFlags(0, uint32(count), uint32(size), netpoll.BufRingIncremental)
		if err == nil {
			return br, nil
		}
		if !errors.Is(err, syscall.EINVAL) {
			return nil, err
		}
	}
	return ring.RegisterBufRing(0, uint32(cfg.Buffers), uint32(cfg.BufferSize))
}
