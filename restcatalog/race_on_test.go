//go:build race

package restcatalog_test

// servedSimDefault is how many schedules the safety simulation runs by default. Under -race (the README's
// test command, and CI) every step costs several times more, so fewer: the package must stay
// well inside go test's 10-minute limit. Long runs set the flag.
const servedSimDefault = 2
