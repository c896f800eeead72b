package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
)

// TestDevAddrOfWrongFormIsToldAsSuch: dev given an address of the wrong
// form (--addr 8080) says it wants host:port, where it said another
// server may hold the address; an address held is still told as held.
func TestDevAddrOfWrongFormIsToldAsSuch(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"8080", "nonsense", "127.0.0.1:99999"} {
		err := run(context.Background(), []string{"dev", "--addr", addr}, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "want host:port") || strings.Contains(err.Error(), "may hold it") {
			t.Errorf("dev --addr %s: %v; want it to ask for host:port", addr, err)
		}
	}
	ln, err := net.Listen("tcp", freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = run(context.Background(), []string{"dev", "--addr", ln.Addr().String()}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "may hold it") {
		t.Errorf("dev --addr %s (held): %v; want it to say another server may hold it", ln.Addr(), err)
	}
}
