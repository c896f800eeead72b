//go:build !linux

package replay

import "time"

// threadTime is the wall clock where a thread's CPU time cannot be read.
func threadTime() time.Duration { return time.Duration(time.Now().UnixNano()) }
