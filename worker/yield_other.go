//go:build !linux

package worker

// yieldThread is sched_yield where there is one; elsewhere the Go
// scheduler's yield (foreground.wait) is all.
func yieldThread() {}
