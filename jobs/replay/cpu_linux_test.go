package replay

import (
	"syscall"
	"time"
	"unsafe"
)

// threadTime is the CPU time the calling thread has used, to the
// nanosecond (CLOCK_THREAD_CPUTIME_ID); the caller locks its goroutine to
// the thread (runtime.LockOSThread).
func threadTime() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}
