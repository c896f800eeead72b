//go:build unix && !aix

package postgres

import (
	"syscall"
	"testing"
	"time"
)

// TestPendingReadDoesNotWaitOnABlockingSocket: the peek of a connection
// taken from the pool never waits, even on a socket in blocking mode (Go
// makes its own non-blocking, but nothing in the peek should depend on
// it): an idle session's socket with nothing to read counts as open, at
// once, where a blocking peek waited for the server's next byte, for
// ever on an idle session.
func TestPendingReadDoesNotWaitOnABlockingSocket(t *testing.T) {
	t.Parallel()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[0])
	peer := fds[1]
	closed := false
	defer func() {
		if !closed {
			syscall.Close(peer)
		}
	}()
	done := make(chan bool, 1)
	go func() { done <- pendingRead(uintptr(fds[0])) }()
	select {
	case pending := <-done:
		if pending {
			t.Errorf("pendingRead of a socket with nothing to read = true, want false (open)")
		}
	case <-time.After(5 * time.Second):
		syscall.Close(peer) // an end of file lets the blocked peek return
		closed = true
		<-done
		t.Errorf("pendingRead waited on a blocking socket with nothing to read")
	}
}
