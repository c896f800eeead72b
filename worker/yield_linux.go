package worker

import "syscall"

// yieldThread offers the calling thread's CPU to any other thread that is
// waiting for it (sched_yield): it returns at once when none is.
func yieldThread() { _, _, _ = syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
