package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestConcurrentMigrationsSayWhoMigrated: api processes started together
// on a new database (a Procfile's web=3) each log the version they found
// when they came to migrate. They read it before the migration's lock, so
// all of them logged "from 0", as if each had migrated the schema; now one
// says 0 and the others the version it left.
func TestConcurrentMigrationsSayWhoMigrated(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDatabase(t)
	latest, err := postgres.LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	const procs = 4
	stores := make([]*postgres.Store, procs)
	for i := range stores {
		if stores[i], err = postgres.Open(t.Context(), url); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stores[i].Close)
	}
	var (
		mu   sync.Mutex
		logs strings.Builder
		wg   sync.WaitGroup
	)
	start := make(chan struct{})
	for _, st := range stores {
		wg.Go(func() {
			var buf strings.Builder
			<-start
			if err := migrateSaying(context.Background(), st, slog.New(slog.NewJSONHandler(&buf, nil))); err != nil {
				t.Error(err)
			}
			mu.Lock()
			logs.WriteString(buf.String())
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()

	froms := map[int]int{}
	for line := range strings.Lines(logs.String()) {
		var rec struct {
			Msg  string `json:"msg"`
			From *int   `json:"from"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.From != nil {
			froms[*rec.From]++
		}
	}
	if froms[0] != 1 || froms[latest] != procs-1 {
		t.Errorf("the %d processes said they migrated from %v (version: processes), want one from 0 and %d from %d:\n%s",
			procs, froms, procs-1, latest, logs.String())
	}
}
