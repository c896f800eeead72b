package api

import (
	"net/http"
	"time"
)

// DefaultWriteStall bounds how long one write of an answer may wait for a
// client that does not read (Config.WriteStall).
const DefaultWriteStall = 30 * time.Second

// withWriteStall drops a connection whose client stops reading: every
// write of an answer must go through within stall, so a client that asks
// for a large answer and never reads it holds the answer's memory for
// stall at most, not for as long as it keeps the connection open. A slow
// client that keeps reading is not cut off, however long the answer takes.
func withWriteStall(next http.Handler, stall time.Duration) http.Handler {
	if stall <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall}, r)
	})
}

// stallWriter sets a write deadline before each write.
type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
	armed bool // the connection takes deadlines (not a test recorder)
	tried bool
}

func (s *stallWriter) Write(p []byte) (int, error) {
	if !s.tried || s.armed {
		err := s.rc.SetWriteDeadline(time.Now().Add(s.stall))
		s.tried, s.armed = true, err == nil
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer
// (Flush, deadlines) through the wrapper.
func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
