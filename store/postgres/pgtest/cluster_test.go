package pgtest

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestThrowawayCluster starts a cluster as the harness does when no
// server is configured, and checks that it stops and is removed when its
// lifeline closes, as it does when the test process exits.
func TestThrowawayCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("initialises a PostgreSQL cluster")
	}
	if _, err := findBinaries(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	c, err := startCluster()
	if err != nil {
		t.Fatal(err)
	}
	if err := ping(c.url); err != nil {
		t.Fatalf("cluster at %s does not answer: %v", c.url, err)
	}
	if err := c.lifeline.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, statErr := os.Stat(c.dir)
		if errors.Is(statErr, os.ErrNotExist) && ping(c.url) != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster still running or %s still there 30 s after its lifeline closed", c.dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
