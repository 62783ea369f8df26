//go:build !race

package cleanup_test

// simDefault is how many schedules the safety simulation runs by default (see race_on_test.go).
const simDefault = 8
