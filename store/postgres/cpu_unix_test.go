//go:build linux

package postgres_test

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU locks the benchmark's goroutine to its thread and returns a
// function that reports the CPU time the thread has used since, so that a
// figure does not count the time other processes held the cores.
func threadCPU(b *testing.B) func() time.Duration {
	runtime.LockOSThread()
	b.Cleanup(runtime.UnlockOSThread)
	start := threadTime()
	return func() time.Duration { return threadTime() - start }
}

func threadTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
