package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestWriteStallDropsAClientThatStopsReading: a client that asks for a
// large answer and never reads it is dropped once a write has waited the
// stall, so the handler (and the answer it holds) goes; a client that
// reads slowly but steadily gets the whole answer.
func TestWriteStallDropsAClientThatStopsReading(t *testing.T) {
	t.Parallel()
	const size = 64 << 20
	// The stall is long enough that a loaded machine's scheduling never
	// makes the steady reader look stalled, and short for the test.
	const stall = 2 * time.Second
	chunk := make([]byte, 1<<20)
	done := make(chan error, 2)
	h := withWriteStall(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}), stall)
	srv := httptest.NewServer(h)
	defer srv.Close()

	// A client that never reads.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the handler wrote 64 MB to a client that reads nothing")
		}
	case <-time.After(30 * time.Second): // generous for a loaded machine
		t.Fatal("a client that stopped reading still holds the handler")
	}

	// A client that reads slowly, for longer than the stall in all.
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var got int64
	buf := make([]byte, 8<<20)
	start := time.Now()
	for {
		n, err := io.ReadFull(br, buf)
		got += int64(n)
		if err != nil {
			break
		}
		time.Sleep(stall / 6) // 8 pauses: longer than the stall in all
	}
	if got != size {
		t.Fatalf("a steady reader got %d of %d bytes", got, size)
	}
	if err := <-done; err != nil {
		t.Fatalf("the steady reader's answer failed after %v: %v", time.Since(start), err)
	}
}
