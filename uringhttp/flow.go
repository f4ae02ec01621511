package uringhttp

import uringrt "github.com/uringrt/uringrt/runtime"

// Read flow control: a connection whose handler has not consumed 64 KiB
// of input stops being read until it has.

type readPauser interface {
	PauseRead()
	ResumeRead()
}

type readPauserErr interface {
	PauseRead() error
	ResumeRead() error
}

func pauseRead(c *uringrt.CallbackConn) {
	switch p := any(c).(type) {
	case readPauser:
		p.PauseRead()
	case readPauserErr:
		p.PauseRead()
	}
}

func resumeRead(c *uringrt.CallbackConn) {
	switch p := any(c).(type) {
	case readPauser:
		p.ResumeRead()
	case readPauserErr:
		p.ResumeRead()
	}
}
