package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// doneSweep stores a DONE sweep of a new customer with result.
func doneSweep(t *testing.T, s *postgres.Store, result []byte) store.Sweep {
	t.Helper()
	ctx := t.Context()
	c, err := s.CreateCustomer(ctx, store.Customer{Email: "ada@example.com", Name: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := s.CreateSweep(ctx, store.Sweep{CustomerID: c.ID, Request: []byte(`{}`), TrialCount: 1, Markets: []string{"m"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishSweep(ctx, sw.ID, result); err != nil {
		t.Fatal(err)
	}
	return sw
}

// largeResult is a result of n trials of about a kilobyte each.
func largeResult(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"objective":"total_pnl","trials":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"trial":%d,"pad":%q}`, i, strings.Repeat(fmt.Sprint(i%10), 1000))
	}
	b.WriteString(`],"best":null}`)
	return b.Bytes()
}

// TestSweepTrialsPageReadsThePage: a page of a large sweep's trials reads
// the sweep's row without its result, then the page's rows of
// sweep_trials, a range of its key: the plan of the page's query scans
// the primary key index for exactly the page's 10 rows (no sequential
// scan, no sort), where the page was once cut out of the whole result,
// read from the sweep's row (a hundred megabytes for an ENTERPRISE
// sweep's) for every page.
func TestSweepTrialsPageReadsThePage(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	sw := doneSweep(t, s, largeResult(3000))
	if _, err := s.Pool().Exec(ctx, `analyze sweep_trials`); err != nil {
		t.Fatal(err)
	}

	var status string
	var at, rows *int32
	var whole []byte
	if err := s.Pool().QueryRow(ctx, postgres.SweepTrialsHeadSQL, sw.ID).Scan(&status, &at, &rows, &whole); err != nil {
		t.Fatal(err)
	}
	if status != "DONE" || at == nil || rows == nil || *rows != 3000 || whole != nil {
		t.Errorf("the head of the page reads status %s, trials_at %v, trial_rows %v and %d bytes of result; want DONE, the trials' place, 3000 and none",
			status, at, rows, len(whole))
	}

	var plan strings.Builder
	r, err := s.Pool().Query(ctx, "explain (analyze, costs off, timing off, summary off) "+postgres.SweepTrialsSQL, sw.ID, 1234, 1244)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var line string
		if err := r.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("page plan:\n%s", plan.String())
	scan := regexp.MustCompile(`Index Scan using sweep_trials_pkey on sweep_trials .*\(actual rows=(\d+) loops=1\)`).FindStringSubmatch(plan.String())
	if scan == nil || scan[1] != "10" || strings.Contains(plan.String(), "Seq Scan") || strings.Contains(plan.String(), "Sort") {
		t.Errorf("want the page read as the 10 rows of a scan of sweep_trials_pkey, without a sequential scan or a sort:\n%s", plan.String())
	}

	page, total, err := s.SweepTrials(ctx, sw.ID, 1234, 10)
	if err != nil || total != 3000 || len(page) != 10 || !bytes.HasPrefix(page[0], []byte(`{"trial":1234,`)) || !bytes.HasPrefix(page[9], []byte(`{"trial":1243,`)) {
		t.Errorf("SweepTrials(1234, 10) = %d trials of %d, %v", len(page), total, err)
	}
}

// TestSweepFinishedBeforeTrialRows: a sweep finished before migration 015
// has its whole result in its row and no trial rows; it is read as it was
// then, the same bytes, pages and result.
func TestSweepFinishedBeforeTrialRows(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	result := []byte(`{"best":null, "trials":[ {"trial":0}, {"trial":1},{"trial":2} ]}`)
	sw := doneSweep(t, s, result)
	_, err := s.Pool().Exec(ctx, `
		with gone as (delete from sweep_trials where sweep_id = $1)
		update sweeps set result = $2, trials_at = null, trial_rows = null where id = $1`, sw.ID, result)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSweep(ctx, sw.ID)
	if err != nil || string(got.Result) != string(result) {
		t.Errorf("GetSweep: %q, %v; want %q", got.Result, err, result)
	}
	var w bytes.Buffer
	if err := s.WriteSweepResult(ctx, sw.ID, &w); err != nil || w.String() != string(result) {
		t.Errorf("WriteSweepResult: %q, %v; want %q", w.String(), err, result)
	}
	page, total, err := s.SweepTrials(context.Background(), sw.ID, 1, 5)
	want := []string{`{"trial":1}`, `{"trial":2}`}
	gotPage := make([]string, len(page))
	for i, p := range page {
		gotPage[i] = string(p)
	}
	if err != nil || total != 3 || !slices.Equal(gotPage, want) {
		t.Errorf("SweepTrials(1, 5) = %q, %d, %v; want %q, 3", gotPage, total, err, want)
	}
}

// TestWriteSweepResultRoundTrips: writing out a sweep of fewer trials
// than a batch sends three statements: the read lease, which answers the
// sweep's head and the result around its trials, the trials, and the
// lease given back. It sent five: the head, the lease, the result, the
// trials, the lease given back.
func TestWriteSweepResultRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var n atomic.Int64
	s, err := postgres.OpenCounting(ctx, pgtest.NewDatabase(t), &n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	result := largeResult(3)
	sw := doneSweep(t, s, result)
	n.Store(0)
	var w bytes.Buffer
	if err := s.WriteSweepResult(ctx, sw.ID, &w); err != nil || !bytes.Equal(w.Bytes(), result) {
		t.Fatalf("WriteSweepResult: %d bytes, %v; want the %d stored", w.Len(), err, len(result))
	}
	if got := n.Load(); got != 3 {
		t.Errorf("WriteSweepResult sent %d statements, want 3", got)
	}
}

// TestSweepStampedUnderTheCapLock: a sweep stored under a cap while
// another create of the customer holds its lock is stamped once it has
// the lock, after the other's commit, so a customer's sweeps are oldest
// first in the order they were stored, the order of the sweeps a plan
// keeps (api.StopSweepsOffPlan). It was stamped as the call began: a
// sweep stored second could carry the older CreatedAt and be kept in
// place of the one stored first.
func TestSweepStampedUnderTheCapLock(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	c, err := s.CreateCustomer(ctx, store.Customer{Email: "ada@example.com", Name: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	// Another create of the customer holds the lock.
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($1, hashtext($2))`, postgres.SweepCapLock, c.ID); err != nil {
		t.Fatal(err)
	}
	type created struct {
		sw  store.Sweep
		err error
	}
	done := make(chan created, 1)
	go func() {
		sw, err := s.CreateSweep(ctx, store.Sweep{CustomerID: c.ID, Request: []byte(`{}`), TrialCount: 1, Markets: []string{"m"}}, 4)
		done <- created{sw, err}
	}()
	// Until the create waits on the lock.
	for {
		var waiting bool
		if err := s.Pool().QueryRow(ctx, `select exists (select 1 from pg_locks where locktype = 'advisory' and not granted
			and classid::bigint = $1 and objid::bigint = hashtext($2)::bigint & 4294967295)`, postgres.SweepCapLock, c.ID).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case got := <-done:
			t.Fatalf("the create did not wait for the lock: %+v %v", got.sw, got.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	var released time.Time
	if err := tx.QueryRow(ctx, `select clock_timestamp()`).Scan(&released); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.sw.CreatedAt.Before(released) {
		t.Errorf("the sweep stored once the lock was free is stamped %s, before the lock was released at %s",
			got.sw.CreatedAt.Format(time.RFC3339Nano), released.UTC().Format(time.RFC3339Nano))
	}
	if !got.sw.UpdatedAt.Equal(got.sw.CreatedAt) {
		t.Errorf("a new sweep's UpdatedAt %s, want its CreatedAt %s", got.sw.UpdatedAt, got.sw.CreatedAt)
	}
}
