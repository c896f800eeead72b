package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/updown/updown/store/postgres/pgtest"
)

// TestSeedInterruptedIsToldAndFinished: a seed stopped half way (Ctrl-C)
// says the database holds part of the data and how to finish or redo it
// (it said only "interrupt signal received"), and running it again with
// the same flags completes it.
func TestSeedInterruptedIsToldAndFinished(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	// Interrupted once the markets are written, while the snapshots are.
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	var errOut bytes.Buffer
	go func() {
		done <- run(ctx, []string{"seed", "--database-url", dbURL, "--snapshots-per-market", "60"}, &bytes.Buffer{}, &errOut)
	}()
	for stored := 0; stored == 0; {
		select {
		case err := <-done:
			t.Fatalf("the seed ended before a market was stored, or before it was interrupted: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		// The table exists once the seed's store is open and migrated.
		_ = conn.QueryRow(context.Background(), `select count(*) from markets`).Scan(&stored)
	}
	cancel(errors.New("interrupt signal received"))
	err = <-done
	if err == nil {
		t.Fatal("the seed finished before it was interrupted: the test needs a slower seed")
	}
	for _, want := range []string{"part of the generated data", "updown seed again (--seed 1 --snapshots-per-market 60)", "drop and recreate the database"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the interrupted seed's error %q does not say %q", err, want)
		}
	}

	var next bytes.Buffer
	if err := run(context.Background(), []string{"seed", "--database-url", dbURL, "--snapshots-per-market", "60"}, &bytes.Buffer{}, &next); err != nil {
		t.Fatalf("the next seed: %v\n%s", err, next.String())
	}
	var depth int
	if err := conn.QueryRow(context.Background(), `select count(*) from depth_snapshots`).Scan(&depth); err != nil || depth == 0 {
		t.Errorf("after the next seed: %d depth snapshots (%v), want the whole data", depth, err)
	}
}
