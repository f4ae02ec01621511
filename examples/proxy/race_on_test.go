//go:build race

package main

// raceEnabled: the race detector's shadow memory makes RSS figures
// meaningless.
const raceEnabled = true
