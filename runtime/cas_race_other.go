//go:build race && !amd64 && !arm64

package uringrt

// pdCommit runs on the scheduler's stack, where the race detector's
// instrumented atomics crash; casNoRace exists in assembly for amd64 and
// arm64 only, so a -race build elsewhere stops here with this name.
var _ = raceBuildsOfUringrtNeedAmd64OrArm64
