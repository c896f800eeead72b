package postgres

import (
	"context"
	"crypto/tls"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// liveConn is the pool's PrepareConn hook: a pooled connection the server
// has closed is destroyed rather than handed out, and the pool takes
// another, or makes a new one. Postgres ends a session it terminates (a
// restart or shutdown, pg_terminate_backend, idle_session_timeout) with
// an error message and a close the connection's socket holds until read;
// the pool pings only connections idle for over a second, so the first
// query to take each such connection failed with 57P01 admin_shutdown,
// as store.ErrUnavailable, and the api answered 503 to as many requests
// as the pool held dead connections. The check costs a read that does
// not wait (no round trip): the socket of an idle session has nothing to
// read, and anything there (data, end of file, an error) means the
// server is done with it. A connection whose server stopped answering
// without closing it is not caught here; the pool's ping after a second
// idle, and the query deadline, are for that.
func liveConn(_ context.Context, c *pgx.Conn) (bool, error) {
	pc := c.PgConn()
	if pc.IsClosed() || pc.IsBusy() {
		return false, nil
	}
	return !closedByPeer(pc.Conn()), nil
}

// closedByPeer reports whether the idle connection c has something to
// read, which for a Postgres session waiting for its next query means
// the server ended it. A connection that cannot be checked (not a
// socket) counts as open.
func closedByPeer(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	// Control, not Read: Read waits for the descriptor's read lock, which
	// a read of pgconn's still blocked (its background reader, started
	// while a large query was written) holds until the server sends
	// something, for ever on an idle session. The peek does not wait.
	if err := raw.Control(func(fd uintptr) { closed = pendingRead(fd) }); err != nil {
		return false
	}
	return closed
}
