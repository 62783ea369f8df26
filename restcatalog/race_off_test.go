//go:build !race

package restcatalog_test

// servedSimDefault is how many schedules the safety simulation runs by default (see race_on_test.go).
const servedSimDefault = 4
