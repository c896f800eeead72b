//go:build !unix || aix

package postgres

// pendingRead cannot peek at a socket here (AIX: its syscall package has
// no MSG_DONTWAIT for a peek that never waits): every connection counts as
// open, and one the server closed fails its next query as before.
func pendingRead(uintptr) bool { return false }
