package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// waitOutput waits until p has printed s, failing the test if p exits
// first or within passes.
func (p *proc) waitOutput(t testing.TB, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(p.out.String(), s) {
		select {
		case <-p.done:
			t.Fatalf("%s exited before printing %q: %v\n%s", p.name, s, p.err, lastN(p.out.String(), 3000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print %q within %s\n%s", p.name, s, within, lastN(p.out.String(), 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWaitForSchema: waiting on a database never migrated says so once
// and returns once it is migrated; a cancelled wait returns the
// cancellation.
func TestWaitForSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewEmptyDatabase(t)
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out syncBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))

	latest, err := postgres.LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := waitForSchema(cctx, st, log, time.Millisecond); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("a cancelled wait: %v", err)
	}

	done := make(chan error, 1)
	go func() { done <- waitForSchema(ctx, st, log, 10*time.Millisecond) }()
	want := fmt.Sprintf("waiting for database schema version %d (have 0); run updown migrate or start the api", latest)
	for deadline := time.Now().Add(patience); !strings.Contains(out.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %v:\n%s", want, patience, out.String())
		}
	}
	select {
	case err := <-done:
		t.Fatalf("the wait returned on an unmigrated database: %v", err)
	default:
	}
	runCmd(t, "migrate", "--database-url", url)
	if err := ended(t, "the wait for the migration", done); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "waiting for database schema"); n != 1 {
		t.Errorf("said it was waiting %d times, want once:\n%s", n, out.String())
	}
	// Migrated already: no wait, nothing said.
	var again syncBuffer
	if err := waitForSchema(ctx, st, slog.New(slog.NewTextHandler(&again, nil)), time.Millisecond); err != nil || again.String() != "" {
		t.Errorf("on a migrated database: %v, %q", err, again.String())
	}
}

// TestProcessesWaitForMigration starts the collector, a worker and an api
// that does not migrate on an empty database, as a Procfile may start
// them before the migration: each says once that it waits for the schema,
// none runs a query against it, and once `updown migrate` has run, each
// goes on.
func TestProcessesWaitForMigration(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	rd := redistest.Start(t)
	s := services{dbURL: dbURL, redisURL: rd.URL}
	dead := "http://127.0.0.1:1"
	collector := startProc(t, "collect", s.environ(), "collect", "--series", "btc:5m", "--gamma-url", dead, "--clob-url", dead,
		"--ws-url", "", "--binance-spot-url", dead, "--binance-futures-url", dead)
	worker := startWorker(t, s, "worker")
	addr := freeAddr(t)
	api := startProc(t, "api", s.environ(), "api", "--addr", addr) // MIGRATE_ON_START=false
	procs := []*proc{collector, worker, api}
	latest, err := postgres.LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}

	want := fmt.Sprintf("waiting for database schema version %d (have 0); run updown migrate or start the api", latest)
	for _, p := range procs {
		p.waitOutput(t, want, patience)
	}
	runCmd(t, "migrate", "--database-url", dbURL)
	collector.waitOutput(t, "collector starting", patience)
	worker.waitOutput(t, "worker started", patience)
	waitUp(t, api, "http://"+addr)
	// The api says when it serves requests, not only that it listens (it
	// listened all along, answering 503).
	api.waitOutput(t, "api ready", patience)
	for _, p := range procs {
		out := p.out.String()
		if n := strings.Count(out, "waiting for database schema"); n != 1 {
			t.Errorf("%s said it was waiting %d times, want once", p.name, n)
		}
		if strings.Contains(out, "does not exist") {
			t.Errorf("%s queried the unmigrated database:\n%s", p.name, lastN(out, 3000))
		}
		if strings.Contains(out, "migrations applied") {
			t.Errorf("%s, not migrating, said it applied migrations:\n%s", p.name, lastN(out, 3000))
		}
	}
}

// TestOlderBuildSaysTheSchemaIsNewer: an api (migrating at start or not)
// and a worker started on a database a newer build migrated (this build
// rolled back, or an old binary deployed by mistake) run, as README's
// Production allows, and warn that the schema is newer than theirs,
// naming both versions, as `updown migrate` says; they said nothing.
func TestOlderBuildSaysTheSchemaIsNewer(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	rd := redistest.Start(t)
	s := services{dbURL: dbURL, redisURL: rd.URL}
	latest, err := postgres.LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Pool().Exec(context.Background(), "update schema_version set version = $1", latest+1); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("database schema version %d is newer than this build's %d", latest+1, latest)
	migrating, _ := startAPI(t, s, "MIGRATE_ON_START=true")
	waiting, _ := startAPI(t, s)
	worker := startWorker(t, s, "worker")
	worker.waitOutput(t, "worker started", patience)
	for _, p := range []*proc{migrating, waiting, worker} {
		p.waitOutput(t, want, patience)
	}
}

// TestAPISaysItMigrated: an api that migrates at start logs, at INFO,
// what `updown migrate` prints (the schema's version once migrated),
// with the version it found; it migrated without a word.
func TestAPISaysItMigrated(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	rd := redistest.Start(t)
	s := services{dbURL: dbURL, redisURL: rd.URL}
	latest, err := postgres.LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	api, _ := startAPI(t, s, "MIGRATE_ON_START=true")
	api.waitOutput(t, "api ready", patience)
	want := fmt.Sprintf("migrations applied: schema at version %d", latest)
	var found bool
	for line := range strings.Lines(api.out.String()) {
		var rec struct {
			Level   string `json:"level"`
			Msg     string `json:"msg"`
			Version *int   `json:"version"`
			From    *int   `json:"from"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != want {
			continue
		}
		found = true
		if rec.Level != "INFO" || rec.Version == nil || *rec.Version != latest || rec.From == nil || *rec.From != 0 {
			t.Errorf("the api logged %s; want level INFO, version %d, from 0", strings.TrimSpace(line), latest)
		}
	}
	if !found {
		t.Errorf("the api migrated a new database without logging %q:\n%s", want, lastN(api.out.String(), 3000))
	}
}
