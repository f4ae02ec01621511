package uringhttp

import uringrt "github.com/uringrt/uringrt/runtime"

// Read flow control: a connection whose handler has not consumed 64 KiB
// of input stops being read (its recv stopped, TCP flow control slowing
// the client) until it has.

func pauseRead(c *uringrt.CallbackConn)  { c.PauseRead() }
func resumeRead(c *uringrt.CallbackConn) { c.ResumeRead() }
