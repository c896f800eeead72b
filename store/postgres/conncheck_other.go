//go:build !unix

package postgres

// pendingRead cannot peek at a socket here: every connection counts as
// open, and one the server closed fails its next query as before.
func pendingRead(uintptr) bool { return false }
