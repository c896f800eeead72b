//go:build unix && !aix

package postgres

import (
	"errors"
	"syscall"
)

// pendingRead reports whether the socket fd has data, an end of file or
// an error to read, without taking any data from it. It does not wait,
// whether the socket is non-blocking (Go's are) or not (MSG_DONTWAIT).
func pendingRead(fd uintptr) bool {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	// Nothing to read (EAGAIN: the session is idle), or interrupted
	// before it could tell, counts as open; data, an end of file (no
	// error, no byte) or a reset as ended.
	return !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR)
}
