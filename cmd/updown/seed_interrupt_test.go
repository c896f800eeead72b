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
// says the database holds part of the data and how to finish or redo it;
// the next run says an earlier seed did not finish and what the database
// holds, and completes it; a run after that says nothing of it. The next
// run used to start as on an empty database, without a word.
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
	for _, want := range []string{"an earlier updown seed (--seed 1 --snapshots-per-market 60", "did not finish",
		"without their snapshots", "this run writes what is missing"} {
		if !strings.Contains(next.String(), want) {
			t.Errorf("the next seed's output does not say %q:\n%s", want, next.String())
		}
	}
	var depth int
	if err := conn.QueryRow(context.Background(), `select count(*) from depth_snapshots`).Scan(&depth); err != nil || depth == 0 {
		t.Errorf("after the next seed: %d depth snapshots (%v), want the whole data", depth, err)
	}

	var third bytes.Buffer
	if err := run(context.Background(), []string{"seed", "--database-url", dbURL, "--snapshots-per-market", "60"}, &bytes.Buffer{}, &third); err != nil {
		t.Fatalf("a third seed: %v\n%s", err, third.String())
	}
	if strings.Contains(third.String(), "did not finish") {
		t.Errorf("the seed after a finished one still tells of an unfinished one:\n%s", third.String())
	}
}
