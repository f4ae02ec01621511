// Package interop runs real third-party software on uringrt's public API,
// as a new user would: a DNS server built with github.com/miekg/dns and
// HTTP/3 with github.com/quic-go/quic-go, both serving on a uringrt
// PacketConn; the chi, gin and echo routers and the gorilla and coder
// WebSocket libraries served by uringhttp. It is a module of its own so that these libraries stay out
// of uringrt's go.mod; .ci/run runs its tests.
package interop
