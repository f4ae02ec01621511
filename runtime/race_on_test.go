//go:build race

package uringrt

// raceEnabled: the race detector is on; goroutine-heavy work runs several
// times slower, and time bounds chosen for a normal build scale with it.
const raceEnabled = true
