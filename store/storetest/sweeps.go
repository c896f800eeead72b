package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

func sweepTests() []test {
	return []test{
		{"Create", testSweepCreate},
		{"CreateValidation", testSweepCreateValidation},
		{"NotFound", testSweepNotFound},
		{"Copies", testSweepCopies},
		{"List", testSweepList},
		{"CountActive", testSweepCountActive},
		{"Stalled", testSweepStalled},
		{"Cap", testSweepCap},
		{"ConcurrentCap", testSweepConcurrentCap},
		{"Transitions", testSweepTransitions},
		{"TransitionValidation", testSweepTransitionValidation},
		{"Finish", testSweepFinish},
		{"Shards", testSweepShards},
		{"EachShard", testSweepEachShard},
		{"ResultParts", testSweepResultParts},
		{"LargeResult", testSweepLargeResult},
		{"ResultReadsRefused", testSweepResultReadsRefused},
		{"ShardRefusals", testSweepShardRefusals},
		{"ConcurrentShards", testSweepConcurrentShards},
		{"ConcurrentEnds", testSweepConcurrentEnds},
		{"CancelDuringShards", testSweepCancelDuringShards},
		{"Retention", testSweepRetention},
		{"RetentionWhileWritten", testSweepRetentionWhileWritten},
		{"CancelledContext", testSweepCancelledContext},
	}
}

// sweepIDPattern is what a store-assigned sweep id looks like.
var sweepIDPattern = regexp.MustCompile(`^sw_[a-z2-7]{16}$`)

// sweepRequest is a request body whose bytes a store must keep exactly:
// odd spacing, keys out of order, a duplicate key, an escaped NUL and
// non-ASCII text, none of which survives a round trip through a JSON
// parser.
var sweepRequest = []byte("{\"strategy\": {\"side\":\"UP\" , \"positionSize\":10},\n\"b\":1,\"a\":[1.50, 2e3],\"a\":null,\"note\":\"\\u0000 – é\"}")

// sweepMarkets returns n market slugs in start_time order.
func sweepMarkets(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("btc-updown-5m-%d", t0().Add(time.Duration(i)*5*time.Minute).Unix())
	}
	return out
}

// newSweep is a sweep of the customer with the trials over the markets.
func newSweep(customerID string, trials int, markets []string) store.Sweep {
	return store.Sweep{CustomerID: customerID, Request: sweepRequest, TrialCount: trials, Markets: markets}
}

func createSweep(t *testing.T, s store.Store, sw store.Sweep) store.Sweep {
	t.Helper()
	got, err := s.CreateSweep(t.Context(), sw, 0)
	mustOK(t, err, "CreateSweep")
	return got
}

func getSweep(t *testing.T, s store.Store, id string) store.Sweep {
	t.Helper()
	got, err := s.GetSweep(t.Context(), id)
	mustOK(t, err, "GetSweep "+id)
	return got
}

// sweepCustomer creates a customer to own sweeps and returns its id.
func sweepCustomer(t *testing.T, s store.Store, name string) string {
	t.Helper()
	return createCustomer(t, s, newCustomer(name)).ID
}

// trialResults is a shard's results (opaque to the store; here one JSON
// entry per trial), marked with tag so that a second put with other
// results can be told apart.
func trialResults(trials int, tag string) []byte {
	var b bytes.Buffer
	b.WriteString("[")
	for i := range trials {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"trial":%d,"pnl":%d.25,"tag":%q}`, i, i-1, tag)
	}
	b.WriteString("]")
	return b.Bytes()
}

func sweepDiff(want, got store.Sweep) diff {
	var d diff
	eq(&d, "ID", want.ID, got.ID)
	eq(&d, "CustomerID", want.CustomerID, got.CustomerID)
	eq(&d, "Status", want.Status, got.Status)
	eq(&d, "Request", string(want.Request), string(got.Request))
	eq(&d, "TrialCount", want.TrialCount, got.TrialCount)
	eqSlice(&d, "Markets", want.Markets, got.Markets)
	eq(&d, "ReplaysTotal", want.ReplaysTotal, got.ReplaysTotal)
	eq(&d, "ReplaysDone", want.ReplaysDone, got.ReplaysDone)
	eq(&d, "Result", string(want.Result), string(got.Result))
	if (want.Result == nil) != (got.Result == nil) {
		d.add("Result is nil", want.Result == nil, got.Result == nil)
	}
	eq(&d, "Error", want.Error, got.Error)
	eqTime(&d, "CreatedAt", want.CreatedAt, got.CreatedAt)
	eqTime(&d, "UpdatedAt", want.UpdatedAt, got.UpdatedAt)
	eqTimePtr(&d, "FinishedAt", want.FinishedAt, got.FinishedAt)
	return d
}

func checkSweep(t testing.TB, op string, want, got store.Sweep) {
	t.Helper()
	sweepDiff(want, got).check(t, op)
}

// checkSweepIDs fails the test unless got lists the sweeps with the ids,
// in order.
func checkSweepIDs(t testing.TB, op string, want []string, got []store.Sweep) {
	t.Helper()
	ids := make([]string, len(got))
	for i, sw := range got {
		ids[i] = sw.ID
	}
	if !slices.Equal(want, ids) {
		t.Errorf("%s = %v, want %v", op, ids, want)
	}
}

// sweepIn creates a sweep and brings it to status the way the service
// does: RUNNING from QUEUED, DONE by FinishSweep, FAILED and CANCELLED
// from RUNNING.
func sweepIn(t *testing.T, s store.Store, customerID string, status store.SweepStatus) store.Sweep {
	t.Helper()
	ctx := t.Context()
	sw := createSweep(t, s, newSweep(customerID, 2, sweepMarkets(3)))
	if status == store.SweepQueued {
		return sw
	}
	sw, err := s.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, "")
	mustOK(t, err, "SetSweepStatus RUNNING")
	switch status {
	case store.SweepDone:
		if err = s.FinishSweep(ctx, sw.ID, []byte(`{"best":null}`)); err == nil {
			sw, err = s.GetSweep(ctx, sw.ID)
		}
	case store.SweepFailed:
		sw, err = s.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepRunning}, store.SweepFailed, "replay failed")
	case store.SweepCancelled:
		sw, err = s.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepRunning}, store.SweepCancelled, "")
	}
	mustOK(t, err, "bring sweep to "+string(status))
	if sw.Status != status {
		t.Fatalf("sweep is %s, want %s", sw.Status, status)
	}
	return sw
}

// testSweepCreate creates a sweep: the store assigns the id, the status,
// the counts and the timestamps, ignoring what the caller put there, and
// keeps the request's bytes exactly.
func testSweepCreate(t *testing.T, s store.Store) {
	c := sweepCustomer(t, s, "ada")
	in := newSweep(c, 3, sweepMarkets(4))
	in.ID, in.Status, in.ReplaysTotal, in.ReplaysDone = "sw_mine", store.SweepDone, 99, 7
	in.Result, in.Error, in.FinishedAt = []byte(`{}`), "no", ptr(t0())
	in.CreatedAt, in.UpdatedAt = t0(), t0()

	before := time.Now()
	got := createSweep(t, s, in)
	after := time.Now()
	if !sweepIDPattern.MatchString(got.ID) {
		t.Errorf("ID = %q, want one matching %v", got.ID, sweepIDPattern)
	}
	checkRecent(t, "CreatedAt", got.CreatedAt, before, after)
	want := store.Sweep{
		ID: got.ID, CustomerID: c, Status: store.SweepQueued, Request: sweepRequest, TrialCount: 3,
		Markets: sweepMarkets(4), ReplaysTotal: 12, CreatedAt: got.CreatedAt, UpdatedAt: got.CreatedAt,
	}
	checkSweep(t, "CreateSweep", want, got)
	checkSweep(t, "GetSweep", want, getSweep(t, s, got.ID))

	// Ids are distinct.
	other := createSweep(t, s, newSweep(c, 1, sweepMarkets(1)))
	if other.ID == got.ID {
		t.Errorf("two sweeps have the id %q", got.ID)
	}
}

// testSweepCreateValidation refuses sweeps that cannot be run (ErrInvalid)
// or that belong to no customer (ErrNotFound), and stores none of them.
func testSweepCreateValidation(t *testing.T, s store.Store) {
	c := sweepCustomer(t, s, "ada")
	cases := []struct {
		name   string
		change func(sw *store.Sweep)
		want   error
	}{
		{"no customer", func(sw *store.Sweep) { sw.CustomerID = "" }, store.ErrInvalid},
		{"no request", func(sw *store.Sweep) { sw.Request = nil }, store.ErrInvalid},
		{"request not JSON", func(sw *store.Sweep) { sw.Request = []byte(`{"a":`) }, store.ErrInvalid},
		{"request not UTF-8", func(sw *store.Sweep) { sw.Request = []byte("\"\xff\"") }, store.ErrInvalid},
		{"no trials", func(sw *store.Sweep) { sw.TrialCount = 0 }, store.ErrInvalid},
		{"negative trials", func(sw *store.Sweep) { sw.TrialCount = -1 }, store.ErrInvalid},
		{"no markets", func(sw *store.Sweep) { sw.Markets = nil }, store.ErrInvalid},
		{"empty market", func(sw *store.Sweep) { sw.Markets = []string{"a", ""} }, store.ErrInvalid},
		{"market with NUL", func(sw *store.Sweep) { sw.Markets = []string{"a\x00b"} }, store.ErrInvalid},
		{"market not UTF-8", func(sw *store.Sweep) { sw.Markets = []string{"\xff"} }, store.ErrInvalid},
		{"market twice", func(sw *store.Sweep) { sw.Markets = []string{"a", "b", "a"} }, store.ErrInvalid},
		{"unknown customer", func(sw *store.Sweep) { sw.CustomerID = unknownIDs()[0] }, store.ErrNotFound},
		{"customer id not a UUID", func(sw *store.Sweep) { sw.CustomerID = unknownIDs()[1] }, store.ErrNotFound},
	}
	for _, tc := range cases {
		sw := newSweep(c, 2, sweepMarkets(2))
		tc.change(&sw)
		_, err := s.CreateSweep(t.Context(), sw, 0)
		wantErr(t, err, tc.want, "CreateSweep with "+tc.name)
	}
	list, total, err := s.ListSweeps(t.Context(), c, 0, 0)
	mustOK(t, err, "ListSweeps")
	if len(list) != 0 || total != 0 {
		t.Errorf("ListSweeps after refused creates = %d sweeps, total %d; want none", len(list), total)
	}
}

// testSweepNotFound asks for sweeps no store assigned.
func testSweepNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	createSweep(t, s, newSweep(c, 1, sweepMarkets(1)))
	running := []store.SweepStatus{store.SweepRunning}
	for _, id := range []string{"sw_aaaaaaaaaaaaaaaa", "", "nope", "sw_\x00", "\xff"} {
		_, err := s.GetSweep(ctx, id)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("GetSweep(%q)", id))
		_, err = s.SetSweepStatus(ctx, id, running, store.SweepCancelled, "")
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("SetSweepStatus(%q)", id))
		err = s.FinishSweep(ctx, id, []byte(`{}`))
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("FinishSweep(%q)", id))
		_, err = s.PutSweepShard(ctx, id, sweepMarkets(1)[0], 1, []byte(`[]`))
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("PutSweepShard(%q)", id))
		_, err = s.ListSweepShards(ctx, id)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("ListSweepShards(%q)", id))
	}
}

// testSweepCopies changes what was given to and returned by the store: the
// store's sweeps and shards do not change with them.
func testSweepCopies(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	in := newSweep(c, 1, sweepMarkets(2))
	in.Request = bytes.Clone(sweepRequest)
	sw := createSweep(t, s, in)
	want := sw
	want.Request, want.Markets = bytes.Clone(sw.Request), slices.Clone(sw.Markets)
	in.Request[0], in.Markets[0] = ' ', "changed"
	sw.Request[0], sw.Markets[1] = ' ', "changed"
	checkSweep(t, "GetSweep after changing the caller's copies", want, getSweep(t, s, want.ID))

	results := trialResults(1, "a")
	_, err := s.PutSweepShard(ctx, want.ID, want.Markets[0], 1, results)
	mustOK(t, err, "PutSweepShard")
	results[0] = ' '
	shards, err := s.ListSweepShards(ctx, want.ID)
	mustOK(t, err, "ListSweepShards")
	shards[0].Results[1] = ' '
	shards, err = s.ListSweepShards(ctx, want.ID)
	mustOK(t, err, "ListSweepShards")
	if got := string(shards[0].Results); got != string(trialResults(1, "a")) {
		t.Errorf("shard results after changing the caller's copies = %s", got)
	}
}

// testSweepList pages a customer's sweeps newest first, with the total,
// and never lists another customer's.
func testSweepList(t *testing.T, s store.Store) {
	ctx := t.Context()
	ada, bea := sweepCustomer(t, s, "ada"), sweepCustomer(t, s, "bea")
	var ids []string // newest first
	for i := range 5 {
		sw := createSweep(t, s, newSweep(ada, i+1, sweepMarkets(2)))
		ids = slices.Insert(ids, 0, sw.ID)
		createSweep(t, s, newSweep(bea, 1, sweepMarkets(1)))
		tick()
	}
	// A listing leaves out the result, GetSweep has it.
	done, err := s.SetSweepStatus(ctx, ids[1], []store.SweepStatus{store.SweepQueued}, store.SweepRunning, "")
	mustOK(t, err, "SetSweepStatus")
	mustOK(t, s.FinishSweep(ctx, done.ID, []byte(`{"best":1}`)), "FinishSweep")

	cases := []struct {
		limit, offset int
		want          []string
	}{
		{0, 0, ids},
		{2, 0, ids[:2]},
		{2, 2, ids[2:4]},
		{2, 4, ids[4:]},
		{0, 3, ids[3:]},
		{10, 0, ids},
		{1, 5, nil},
		{0, 100, nil},
	}
	for _, tc := range cases {
		op := fmt.Sprintf("ListSweeps(limit %d, offset %d)", tc.limit, tc.offset)
		got, total, err := s.ListSweeps(ctx, ada, tc.limit, tc.offset)
		mustOK(t, err, op)
		if total != 5 {
			t.Errorf("%s total = %d, want 5", op, total)
		}
		if got == nil {
			t.Errorf("%s = nil, want an empty slice", op)
		}
		checkSweepIDs(t, op, tc.want, got)
	}
	got, _, err := s.ListSweeps(ctx, ada, 0, 0)
	mustOK(t, err, "ListSweeps")
	for _, sw := range got {
		want := getSweep(t, s, sw.ID)
		want.Result = nil
		checkSweep(t, "listed sweep", want, sw)
	}
	if full := getSweep(t, s, done.ID); string(full.Result) != `{"best":1}` {
		t.Errorf("GetSweep result = %s", full.Result)
	}

	if _, total, err := s.ListSweeps(ctx, bea, 0, 0); err != nil || total != 5 {
		t.Errorf("ListSweeps of the other customer: total %d, err %v; want 5", total, err)
	}
	for _, id := range unknownIDs() {
		got, total, err := s.ListSweeps(ctx, id, 0, 0)
		mustOK(t, err, "ListSweeps of an unknown customer")
		if got == nil || len(got) != 0 || total != 0 {
			t.Errorf("ListSweeps(%q) = %v, total %d; want an empty slice, 0", id, got, total)
		}
	}
	for _, lo := range [][2]int{{-1, 0}, {0, -1}} {
		_, _, err := s.ListSweeps(ctx, ada, lo[0], lo[1])
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("ListSweeps(limit %d, offset %d)", lo[0], lo[1]))
	}
}

// testSweepCountActive counts the customer's QUEUED and RUNNING sweeps
// only.
func testSweepCountActive(t *testing.T, s store.Store) {
	ctx := t.Context()
	ada, bea := sweepCustomer(t, s, "ada"), sweepCustomer(t, s, "bea")
	for _, st := range []store.SweepStatus{store.SweepQueued, store.SweepRunning, store.SweepRunning,
		store.SweepDone, store.SweepFailed, store.SweepCancelled} {
		sweepIn(t, s, ada, st)
	}
	sweepIn(t, s, bea, store.SweepQueued)
	for _, tc := range []struct {
		customer string
		want     int
	}{{ada, 3}, {bea, 1}, {unknownIDs()[0], 0}, {unknownIDs()[1], 0}} {
		n, err := s.CountActiveSweeps(ctx, tc.customer)
		mustOK(t, err, "CountActiveSweeps")
		if n != tc.want {
			t.Errorf("CountActiveSweeps(%q) = %d, want %d", tc.customer, n, tc.want)
		}
	}
}

// testSweepStalled lists the sweeps in flight not updated since a time, of
// every customer, and the markets a sweep has stored shards of, for the
// workers' resumer.
func testSweepStalled(t *testing.T, s store.Store) {
	ctx := t.Context()
	ada, bea := sweepCustomer(t, s, "ada"), sweepCustomer(t, s, "bea")
	mine := map[string]bool{}
	var want []string
	for _, c := range []struct {
		customer string
		status   store.SweepStatus
	}{{ada, store.SweepQueued}, {ada, store.SweepRunning}, {ada, store.SweepDone}, {ada, store.SweepFailed},
		{ada, store.SweepCancelled}, {bea, store.SweepRunning}} {
		sw := sweepIn(t, s, c.customer, c.status)
		mine[sw.ID] = true
		if c.status.Active() {
			want = append(want, sw.ID)
		}
	}
	ids := func(before time.Time) []string {
		got, err := s.ListStalledSweeps(ctx, before)
		mustOK(t, err, "ListStalledSweeps")
		var out []string
		for _, sw := range got {
			if sw.Result != nil {
				t.Errorf("ListStalledSweeps: sweep %s has its result; want none in a listing", sw.ID)
			}
			if mine[sw.ID] {
				out = append(out, sw.ID)
			}
		}
		slices.Sort(out)
		return out
	}
	slices.Sort(want)
	if got := ids(time.Now().Add(time.Hour)); !slices.Equal(got, want) {
		t.Errorf("ListStalledSweeps(in an hour) = %v, want the sweeps in flight %v", got, want)
	}
	if got := ids(time.Now().Add(-time.Hour)); len(got) != 0 {
		t.Errorf("ListStalledSweeps(an hour ago) = %v, want none", got)
	}

	// What a stalled sweep has stored: its shards' markets, no more.
	sw := sweepIn(t, s, bea, store.SweepRunning)
	markets := func(id string) []string {
		got, err := s.StoredShardMarkets(ctx, id)
		mustOK(t, err, "StoredShardMarkets")
		slices.Sort(got)
		return got
	}
	if got := markets(sw.ID); len(got) != 0 {
		t.Errorf("StoredShardMarkets of a sweep without shards = %v, want none", got)
	}
	for _, m := range []string{sw.Markets[2], sw.Markets[0], sw.Markets[0]} {
		_, err := s.PutSweepShard(ctx, sw.ID, m, sw.TrialCount, trialResults(sw.TrialCount, "x"))
		mustOK(t, err, "PutSweepShard")
	}
	want = []string{sw.Markets[0], sw.Markets[2]}
	slices.Sort(want)
	if got := markets(sw.ID); !slices.Equal(got, want) {
		t.Errorf("StoredShardMarkets = %v, want %v", got, want)
	}
	if got := markets("sw_unknownunknown0"); len(got) != 0 {
		t.Errorf("StoredShardMarkets of an unknown sweep = %v, want none", got)
	}
}

// testSweepCap creates sweeps under a cap on those in flight: it counts the
// customer's QUEUED and RUNNING sweeps only, never another customer's; a
// refused create stores nothing; 0 is no cap and a negative cap invalid.
func testSweepCap(t *testing.T, s store.Store) {
	ctx := t.Context()
	ada, bea := sweepCustomer(t, s, "ada"), sweepCustomer(t, s, "bea")
	for _, st := range []store.SweepStatus{store.SweepDone, store.SweepFailed, store.SweepCancelled} {
		sweepIn(t, s, ada, st)
	}
	sweepIn(t, s, bea, store.SweepRunning)
	first, err := s.CreateSweep(ctx, newSweep(ada, 1, sweepMarkets(1)), 2)
	mustOK(t, err, "CreateSweep 1 under a cap of 2 (3 finished)")
	_, err = s.CreateSweep(ctx, newSweep(ada, 1, sweepMarkets(1)), 2)
	mustOK(t, err, "CreateSweep 2 under a cap of 2")
	_, err = s.CreateSweep(ctx, newSweep(ada, 1, sweepMarkets(1)), 2)
	wantErr(t, err, store.ErrSweepsInFlight, "CreateSweep 3 under a cap of 2")
	_, err = s.CreateSweep(ctx, newSweep(ada, 1, sweepMarkets(1)), 1)
	wantErr(t, err, store.ErrSweepsInFlight, "CreateSweep under a cap of 1 with 2 in flight")
	_, err = s.CreateSweep(ctx, newSweep(ada, 1, sweepMarkets(1)), -1)
	wantErr(t, err, store.ErrInvalid, "CreateSweep under a cap of -1")
	if n, err := s.CountActiveSweeps(ctx, ada); err != nil || n != 2 {
		t.Errorf("CountActiveSweeps after refused creates = %d, %v; want 2", n, err)
	}
	// A sweep that ends makes room; the other customer's in flight never
	// counted.
	_, err = s.SetSweepStatus(ctx, first.ID, []store.SweepStatus{store.SweepQueued}, store.SweepCancelled, "")
	mustOK(t, err, "SetSweepStatus")
	_, err = s.CreateSweep(ctx, newSweep(ada, 1, sweepMarkets(1)), 2)
	mustOK(t, err, "CreateSweep after a cancel")
	_, err = s.CreateSweep(ctx, newSweep(bea, 1, sweepMarkets(1)), 2)
	mustOK(t, err, "CreateSweep by another customer")
	_, err = s.CreateSweep(ctx, newSweep(ada, 1, sweepMarkets(1)), 0)
	mustOK(t, err, "CreateSweep without a cap")
	_, err = s.CreateSweep(ctx, newSweep(unknownIDs()[0], 1, sweepMarkets(1)), 1)
	wantErr(t, err, store.ErrNotFound, "CreateSweep of an unknown customer under a cap")
}

// testSweepConcurrentCap races creates of one customer under caps of 1 and
// 3: exactly the cap's number succeed, the rest are ErrSweepsInFlight, and
// the store holds exactly that many in flight.
func testSweepConcurrentCap(t *testing.T, s store.Store) {
	ctx := t.Context()
	const racers = 8
	for _, limit := range []int{1, 3} {
		c := sweepCustomer(t, s, fmt.Sprintf("cap%d", limit))
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		start := make(chan struct{})
		for r := range racers {
			wg.Go(func() {
				<-start
				_, err := s.CreateSweep(ctx, newSweep(c, 1, sweepMarkets(1)), limit)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, store.ErrSweepsInFlight):
					refused++
				default:
					t.Errorf("cap %d: racer %d: %v", limit, r, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if ok != limit || refused != racers-limit {
			t.Errorf("cap %d, %d racers: %d created, %d refused; want %d and %d", limit, racers, ok, refused, limit, racers-limit)
		}
		if n, err := s.CountActiveSweeps(ctx, c); err != nil || n != limit {
			t.Errorf("cap %d: CountActiveSweeps = %d, %v; want %d", limit, n, err, limit)
		}
	}
}

// testSweepTransitions moves sweeps between statuses: a change happens
// only from a status the caller names, final statuses are final, and
// reaching one sets FinishedAt.
func testSweepTransitions(t *testing.T, s store.Store) {
	q, r := store.SweepQueued, store.SweepRunning
	cases := []struct {
		name    string
		start   store.SweepStatus
		from    []store.SweepStatus
		to      store.SweepStatus
		errText string
		want    error // nil: the sweep moves to to
	}{
		{"start", q, []store.SweepStatus{q}, r, "", nil},
		{"cancel queued", q, []store.SweepStatus{q, r}, store.SweepCancelled, "", nil},
		{"cancel running", r, []store.SweepStatus{q, r}, store.SweepCancelled, "", nil},
		{"fail", r, []store.SweepStatus{r}, store.SweepFailed, "worker lost the market", nil},
		{"fail queued", q, []store.SweepStatus{q, r}, store.SweepFailed, "no markets", nil},
		{"requeue", r, []store.SweepStatus{r}, q, "", nil},
		{"running again", r, []store.SweepStatus{q, r}, r, "", nil},
		{"not from queued", q, []store.SweepStatus{r}, store.SweepCancelled, "", store.ErrConflict},
		{"not from running", r, []store.SweepStatus{q}, r, "", store.ErrConflict},
		{"cancelled stays", store.SweepCancelled, []store.SweepStatus{q, r}, r, "", store.ErrConflict},
		{"cancelled not failed", store.SweepCancelled, []store.SweepStatus{q, r}, store.SweepFailed, "late", store.ErrConflict},
		{"done stays", store.SweepDone, []store.SweepStatus{q, r}, store.SweepCancelled, "", store.ErrConflict},
		{"failed stays", store.SweepFailed, []store.SweepStatus{r}, r, "", store.ErrConflict},
	}
	for i, tc := range cases {
		c := sweepCustomer(t, s, fmt.Sprintf("transition%d", i))
		before := sweepIn(t, s, c, tc.start)
		tick()
		got, err := s.SetSweepStatus(t.Context(), before.ID, tc.from, tc.to, tc.errText)
		op := fmt.Sprintf("%s: SetSweepStatus(%s, %v → %s)", tc.name, tc.start, tc.from, tc.to)
		if tc.want != nil {
			wantErr(t, err, tc.want, op)
			checkSweep(t, op+": sweep after the refusal", before, getSweep(t, s, before.ID))
			continue
		}
		mustOK(t, err, op)
		want := before
		if tc.to != tc.start {
			want.Status, want.Error, want.UpdatedAt = tc.to, tc.errText, got.UpdatedAt
			if !got.UpdatedAt.After(before.UpdatedAt) {
				t.Errorf("%s: UpdatedAt %v is not after %v", op, got.UpdatedAt, before.UpdatedAt)
			}
			if tc.to.Final() {
				want.FinishedAt = &got.UpdatedAt
			}
		}
		checkSweep(t, op, want, got)
		checkSweep(t, op+": GetSweep", want, getSweep(t, s, before.ID))
	}
}

// testSweepTransitionValidation refuses transitions SetSweepStatus does not
// make (ErrInvalid), changing nothing.
func testSweepTransitionValidation(t *testing.T, s store.Store) {
	c := sweepCustomer(t, s, "ada")
	sw := sweepIn(t, s, c, store.SweepRunning)
	q, r := store.SweepQueued, store.SweepRunning
	cases := []struct {
		name    string
		from    []store.SweepStatus
		to      store.SweepStatus
		errText string
	}{
		{"no from", nil, store.SweepCancelled, ""},
		{"from done", []store.SweepStatus{r, store.SweepDone}, q, ""},
		{"from cancelled", []store.SweepStatus{store.SweepCancelled}, r, ""},
		{"from failed", []store.SweepStatus{store.SweepFailed}, r, ""},
		{"unknown from", []store.SweepStatus{"PAUSED"}, r, ""},
		{"unknown to", []store.SweepStatus{r}, "PAUSED", ""},
		{"to done", []store.SweepStatus{r}, store.SweepDone, ""},
		{"failed without error", []store.SweepStatus{r}, store.SweepFailed, ""},
		{"error without failing", []store.SweepStatus{r}, store.SweepCancelled, "why"},
	}
	for _, tc := range cases {
		_, err := s.SetSweepStatus(t.Context(), sw.ID, tc.from, tc.to, tc.errText)
		wantErr(t, err, store.ErrInvalid, "SetSweepStatus "+tc.name)
	}
	checkSweep(t, "sweep after refused transitions", sw, getSweep(t, s, sw.ID))
}

// testSweepFinish finishes a RUNNING sweep with its result, and no other.
func testSweepFinish(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	result := []byte(" {\"best\": {\"trial\": 3}, \"z\":1, \"a\":2} ")

	sw := sweepIn(t, s, c, store.SweepRunning)
	tick()
	mustOK(t, s.FinishSweep(ctx, sw.ID, result), "FinishSweep")
	got := getSweep(t, s, sw.ID)
	want := sw
	want.Status, want.Result, want.UpdatedAt, want.FinishedAt = store.SweepDone, result, got.UpdatedAt, &got.UpdatedAt
	if !got.UpdatedAt.After(sw.UpdatedAt) {
		t.Errorf("UpdatedAt %v is not after %v", got.UpdatedAt, sw.UpdatedAt)
	}
	checkSweep(t, "GetSweep after FinishSweep", want, got)

	// DONE is final: a second finish changes nothing.
	err := s.FinishSweep(ctx, sw.ID, []byte(`{"other":true}`))
	wantErr(t, err, store.ErrConflict, "FinishSweep of a DONE sweep")
	checkSweep(t, "GetSweep after a second FinishSweep", want, getSweep(t, s, sw.ID))

	for _, st := range []store.SweepStatus{store.SweepQueued, store.SweepCancelled, store.SweepFailed} {
		other := sweepIn(t, s, c, st)
		err := s.FinishSweep(ctx, other.ID, result)
		wantErr(t, err, store.ErrConflict, "FinishSweep of a "+string(st)+" sweep")
		checkSweep(t, "GetSweep after FinishSweep of a "+string(st)+" sweep", other, getSweep(t, s, other.ID))
	}

	running := sweepIn(t, s, c, store.SweepRunning)
	for _, bad := range [][]byte{nil, []byte(""), []byte(`{"a"`), []byte("\"\xfe\"")} {
		err := s.FinishSweep(ctx, running.ID, bad)
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("FinishSweep with %q", bad))
	}
	checkSweep(t, "GetSweep after refused results", running, getSweep(t, s, running.ID))
}

// testSweepShards stores shards out of order and twice: each is kept
// once, as first given, counted once, and listed in the sweep's market
// order.
func testSweepShards(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	markets := sweepMarkets(5)
	sw := createSweep(t, s, newSweep(c, 3, markets))
	// Another sweep over the same markets keeps its shards apart.
	other := createSweep(t, s, newSweep(c, 3, markets))

	shards, err := s.ListSweepShards(ctx, sw.ID)
	mustOK(t, err, "ListSweepShards of a new sweep")
	if shards == nil || len(shards) != 0 {
		t.Errorf("ListSweepShards of a new sweep = %v, want an empty slice", shards)
	}

	// A QUEUED sweep takes shards: the first may finish before anyone
	// marks the sweep RUNNING.
	before := time.Now()
	order := []int{3, 0, 4}
	done := 0
	for _, i := range order {
		tick()
		got, err := s.PutSweepShard(ctx, sw.ID, markets[i], 3, trialResults(3, "first"))
		mustOK(t, err, "PutSweepShard "+markets[i])
		done += 3
		if got.ReplaysDone != done || got.Status != store.SweepQueued || got.ReplaysTotal != 15 {
			t.Errorf("after shard %d: %s, %d of %d replays; want QUEUED, %d of 15",
				i, got.Status, got.ReplaysDone, got.ReplaysTotal, done)
		}
		if !got.UpdatedAt.After(sw.UpdatedAt) {
			t.Errorf("after shard %d: UpdatedAt %v is not after %v", i, got.UpdatedAt, sw.UpdatedAt)
		}
		sw = got
	}
	after := time.Now()

	// Repeats change nothing, whatever they carry, and count nothing.
	_, err = s.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, "")
	mustOK(t, err, "SetSweepStatus RUNNING")
	sw = getSweep(t, s, sw.ID)
	for _, i := range order {
		got, err := s.PutSweepShard(ctx, sw.ID, markets[i], 3, trialResults(3, "second"))
		mustOK(t, err, "PutSweepShard again "+markets[i])
		checkSweep(t, "sweep after a repeated shard", sw, got)
	}
	checkSweep(t, "GetSweep after repeated shards", sw, getSweep(t, s, sw.ID))

	shards, err = s.ListSweepShards(ctx, sw.ID)
	mustOK(t, err, "ListSweepShards")
	var got []string
	for _, sh := range shards {
		got = append(got, sh.Market)
		if sh.SweepID != sw.ID || sh.Trials != 3 || string(sh.Results) != string(trialResults(3, "first")) {
			t.Errorf("shard %s = sweep %q, %d trials, results %s; want %q, 3, the first results",
				sh.Market, sh.SweepID, sh.Trials, sh.Results, sw.ID)
		}
		checkRecent(t, "shard CreatedAt", sh.CreatedAt, before, after)
	}
	if want := []string{markets[0], markets[3], markets[4]}; !slices.Equal(got, want) {
		t.Errorf("ListSweepShards markets = %v, want %v", got, want)
	}
	// EachSweepShard gives the same shards a few at a time, stops at f's
	// error, and knows no unknown sweep.
	var each []store.SweepShard
	mustOK(t, s.EachSweepShard(ctx, sw.ID, func(sh store.SweepShard) error {
		each = append(each, sh)
		return nil
	}), "EachSweepShard")
	if !reflect.DeepEqual(each, shards) {
		t.Errorf("EachSweepShard = %v, want ListSweepShards's %v", each, shards)
	}
	stop, calls := errors.New("stop"), 0
	if err := s.EachSweepShard(ctx, sw.ID, func(store.SweepShard) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("EachSweepShard with f failing: %v after %d calls, want f's error after 1", err, calls)
	}
	wantErr(t, s.EachSweepShard(ctx, "sw_aaaaaaaaaaaaaaaa", func(store.SweepShard) error { return nil }), store.ErrNotFound, "EachSweepShard of an unknown sweep")

	shards, err = s.ListSweepShards(ctx, other.ID)
	mustOK(t, err, "ListSweepShards of the other sweep")
	if len(shards) != 0 {
		t.Errorf("the other sweep has %d shards, want none", len(shards))
	}
	checkSweep(t, "the other sweep", other, getSweep(t, s, other.ID))
}

// testSweepShardRefusals puts shards a sweep cannot take: ones that do not
// fit it (ErrInvalid) and any, even a repeat, once it is no longer QUEUED
// or RUNNING (ErrConflict). Nothing is stored or counted.
func testSweepShardRefusals(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	markets := sweepMarkets(3)
	sw := sweepIn(t, s, c, store.SweepRunning) // 2 trials over sweepMarkets(3)
	sw, err := s.PutSweepShard(ctx, sw.ID, markets[0], 2, trialResults(2, "kept"))
	mustOK(t, err, "PutSweepShard")

	bad := []struct {
		name    string
		market  string
		trials  int
		results []byte
	}{
		{"foreign market", "eth-updown-5m-1", 2, trialResults(2, "x")},
		{"empty market", "", 2, trialResults(2, "x")},
		{"market not UTF-8", "\xff", 2, trialResults(2, "x")},
		{"market with NUL", "a\x00", 2, trialResults(2, "x")},
		{"too few trials", markets[1], 1, trialResults(1, "x")},
		{"too many trials", markets[1], 3, trialResults(3, "x")},
		{"no trials", markets[1], 0, []byte(`[]`)},
		{"no results", markets[1], 2, nil},
		{"empty results", markets[1], 2, []byte{}},
	}
	for _, tc := range bad {
		_, err := s.PutSweepShard(ctx, sw.ID, tc.market, tc.trials, tc.results)
		wantErr(t, err, store.ErrInvalid, "PutSweepShard with "+tc.name)
	}
	checkSweep(t, "sweep after refused shards", sw, getSweep(t, s, sw.ID))

	for _, st := range []store.SweepStatus{store.SweepCancelled, store.SweepFailed, store.SweepDone} {
		ended := sweepIn(t, s, c, st)
		for _, m := range markets[:2] {
			_, err := s.PutSweepShard(ctx, ended.ID, m, 2, trialResults(2, "late"))
			wantErr(t, err, store.ErrConflict, "PutSweepShard on a "+string(st)+" sweep")
		}
		checkSweep(t, "GetSweep of the "+string(st)+" sweep", ended, getSweep(t, s, ended.ID))
		shards, err := s.ListSweepShards(ctx, ended.ID)
		mustOK(t, err, "ListSweepShards")
		if len(shards) != 0 {
			t.Errorf("%s sweep has %d shards, want none", st, len(shards))
		}
	}

	// Cancelled after a shard: the shard stays, a repeat is refused too.
	_, err = s.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepRunning}, store.SweepCancelled, "")
	mustOK(t, err, "SetSweepStatus CANCELLED")
	_, err = s.PutSweepShard(ctx, sw.ID, markets[0], 2, trialResults(2, "kept"))
	wantErr(t, err, store.ErrConflict, "PutSweepShard repeated on a CANCELLED sweep")
	if got := getSweep(t, s, sw.ID); got.ReplaysDone != 2 {
		t.Errorf("ReplaysDone of the cancelled sweep = %d, want 2", got.ReplaysDone)
	}
	shards, err := s.ListSweepShards(ctx, sw.ID)
	mustOK(t, err, "ListSweepShards of the cancelled sweep")
	if len(shards) != 1 || string(shards[0].Results) != string(trialResults(2, "kept")) {
		t.Errorf("the cancelled sweep's shards = %+v, want the one stored before", shards)
	}
}

// testSweepConcurrentShards has workers race on every shard of a sweep,
// several on each: every shard is stored once and counted once.
func testSweepConcurrentShards(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	const trials, racers = 4, 6
	markets := sweepMarkets(8)
	sw := createSweep(t, s, newSweep(c, trials, markets))
	_, err := s.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, "")
	mustOK(t, err, "SetSweepStatus")

	var wg sync.WaitGroup
	for _, m := range markets {
		for r := range racers {
			wg.Go(func() {
				got, err := s.PutSweepShard(ctx, sw.ID, m, trials, trialResults(trials, fmt.Sprint(r)))
				if err != nil {
					t.Errorf("PutSweepShard %s by racer %d: %v", m, r, err)
					return
				}
				if got.ReplaysDone < trials || got.ReplaysDone > trials*len(markets) {
					t.Errorf("PutSweepShard %s by racer %d: ReplaysDone %d", m, r, got.ReplaysDone)
				}
			})
		}
	}
	wg.Wait()

	got := getSweep(t, s, sw.ID)
	if got.ReplaysDone != got.ReplaysTotal || got.ReplaysTotal != trials*len(markets) {
		t.Errorf("after the race: %d of %d replays, want %d of %d",
			got.ReplaysDone, got.ReplaysTotal, trials*len(markets), trials*len(markets))
	}
	shards, err := s.ListSweepShards(ctx, sw.ID)
	mustOK(t, err, "ListSweepShards")
	if len(shards) != len(markets) {
		t.Fatalf("%d shards, want %d", len(shards), len(markets))
	}
	for i, sh := range shards {
		if sh.Market != markets[i] || sh.Trials != trials {
			t.Errorf("shard %d = %s with %d trials, want %s with %d", i, sh.Market, sh.Trials, markets[i], trials)
		}
		ok := false
		for r := range racers {
			ok = ok || string(sh.Results) == string(trialResults(trials, fmt.Sprint(r)))
		}
		if !ok {
			t.Errorf("shard %s results %s are no racer's", sh.Market, sh.Results)
		}
	}
}

// testSweepConcurrentEnds races a finish, a cancel and a failure on each
// of several sweeps: exactly one wins each, the others get ErrConflict,
// and the sweep is what the winner made it.
func testSweepConcurrentEnds(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	running := []store.SweepStatus{store.SweepQueued, store.SweepRunning}
	for range 5 {
		sw := sweepIn(t, s, c, store.SweepRunning)
		ends := []func() (store.Sweep, error){
			func() (store.Sweep, error) {
				if err := s.FinishSweep(ctx, sw.ID, []byte(`{"done":true}`)); err != nil {
					return store.Sweep{}, err
				}
				return s.GetSweep(ctx, sw.ID) // DONE is final: what the finish made
			},
			func() (store.Sweep, error) {
				return s.SetSweepStatus(ctx, sw.ID, running, store.SweepCancelled, "")
			},
			func() (store.Sweep, error) {
				return s.SetSweepStatus(ctx, sw.ID, running, store.SweepFailed, "lost")
			},
		}
		results := make([]store.Sweep, len(ends))
		errs := make([]error, len(ends))
		var wg sync.WaitGroup
		for i, end := range ends {
			wg.Go(func() { results[i], errs[i] = end() })
		}
		wg.Wait()
		winners := 0
		var won store.Sweep
		for i, err := range errs {
			switch {
			case err == nil:
				winners++
				won = results[i]
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("end %d: error = %v, want nil or one matching ErrConflict", i, err)
			}
		}
		if winners != 1 {
			t.Fatalf("%d ends won, want 1", winners)
		}
		checkSweep(t, "GetSweep after the race", won, getSweep(t, s, sw.ID))
	}
}

// testSweepCancelDuringShards cancels a sweep while workers put its
// shards: each put is stored and counted before the cancel or refused
// after it (ErrConflict), never stored after it.
func testSweepCancelDuringShards(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	const trials = 3
	markets := sweepMarkets(24)
	sw := createSweep(t, s, newSweep(c, trials, markets))
	_, err := s.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, "")
	mustOK(t, err, "SetSweepStatus")

	var mu sync.Mutex
	stored := map[string]bool{}
	var wg sync.WaitGroup
	for i, m := range markets {
		wg.Go(func() {
			got, err := s.PutSweepShard(ctx, sw.ID, m, trials, trialResults(trials, "x"))
			switch {
			case errors.Is(err, store.ErrConflict):
			case err != nil:
				t.Errorf("PutSweepShard %s: %v", m, err)
			case got.Status != store.SweepRunning:
				t.Errorf("PutSweepShard %s stored a shard of a %s sweep", m, got.Status)
			default:
				mu.Lock()
				stored[m] = true
				mu.Unlock()
			}
		})
		if i == len(markets)/2 {
			wg.Go(func() {
				_, err := s.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepRunning}, store.SweepCancelled, "")
				mustOK(t, err, "SetSweepStatus CANCELLED")
			})
		}
	}
	wg.Wait()

	got := getSweep(t, s, sw.ID)
	shards, err := s.ListSweepShards(ctx, sw.ID)
	mustOK(t, err, "ListSweepShards")
	if got.Status != store.SweepCancelled || got.ReplaysDone != trials*len(shards) || len(shards) != len(stored) {
		t.Errorf("after the cancel: %s, %d replays done, %d shards listed, %d puts stored; want CANCELLED, %d × shards, as many shards as puts",
			got.Status, got.ReplaysDone, len(shards), len(stored), trials)
	}
	for _, sh := range shards {
		if !stored[sh.Market] {
			t.Errorf("shard %s is stored but its put was refused", sh.Market)
		}
	}
}

// testSweepRetention deletes sweeps finished before a time, with their
// shards, and never one still in flight.
func testSweepRetention(t *testing.T, s store.Store) {
	ctx := t.Context()
	ada, bea := sweepCustomer(t, s, "ada"), sweepCustomer(t, s, "bea")
	first := sweepIn(t, s, ada, store.SweepRunning)
	_, err := s.PutSweepShard(ctx, first.ID, first.Markets[0], first.TrialCount, trialResults(first.TrialCount, "a"))
	mustOK(t, err, "PutSweepShard")
	mustOK(t, s.FinishSweep(ctx, first.ID, []byte(`{}`)), "FinishSweep")
	first = getSweep(t, s, first.ID)
	tick()
	second := sweepIn(t, s, bea, store.SweepCancelled)
	tick()
	third := sweepIn(t, s, ada, store.SweepFailed)
	queued := sweepIn(t, s, ada, store.SweepQueued)
	running := sweepIn(t, s, bea, store.SweepRunning)
	if !first.FinishedAt.Before(*second.FinishedAt) || !second.FinishedAt.Before(*third.FinishedAt) {
		t.Fatalf("finish times %v, %v, %v are not increasing", first.FinishedAt, second.FinishedAt, third.FinishedAt)
	}

	steps := []struct {
		before time.Time
		want   int
		gone   []store.Sweep
	}{
		{*first.FinishedAt, 0, nil},
		{first.FinishedAt.Add(time.Microsecond), 1, []store.Sweep{first}},
		{*third.FinishedAt, 1, []store.Sweep{second}},
		{third.FinishedAt.Add(100 * 24 * time.Hour), 1, []store.Sweep{third}},
		{third.FinishedAt.Add(100 * 24 * time.Hour), 0, nil},
	}
	for i, st := range steps {
		n, err := s.DeleteSweepsFinishedBefore(ctx, st.before.In(elsewhere()))
		mustOK(t, err, "DeleteSweepsFinishedBefore")
		if n != st.want {
			t.Errorf("step %d: DeleteSweepsFinishedBefore = %d, want %d", i, n, st.want)
		}
		for _, sw := range st.gone {
			_, err := s.GetSweep(ctx, sw.ID)
			wantErr(t, err, store.ErrNotFound, fmt.Sprintf("step %d: GetSweep of a deleted sweep", i))
			_, err = s.ListSweepShards(ctx, sw.ID)
			wantErr(t, err, store.ErrNotFound, fmt.Sprintf("step %d: ListSweepShards of a deleted sweep", i))
		}
	}
	checkSweep(t, "queued sweep", queued, getSweep(t, s, queued.ID))
	checkSweep(t, "running sweep", running, getSweep(t, s, running.ID))
	for _, tc := range []struct {
		customer string
		want     []string
	}{{ada, []string{queued.ID}}, {bea, []string{running.ID}}} {
		got, total, err := s.ListSweeps(ctx, tc.customer, 0, 0)
		mustOK(t, err, "ListSweeps")
		checkSweepIDs(t, "ListSweeps after retention", tc.want, got)
		if total != len(tc.want) {
			t.Errorf("ListSweeps total = %d, want %d", total, len(tc.want))
		}
	}
}

// testSweepCancelledContext calls every sweep method with a cancelled
// context: each fails with an error matching context.Canceled, and writes
// store nothing.
func testSweepCancelledContext(t *testing.T, s store.Store) {
	c := sweepCustomer(t, s, "ada")
	sw := sweepIn(t, s, c, store.SweepRunning)
	done := sweepIn(t, s, c, store.SweepDone)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	running := []store.SweepStatus{store.SweepRunning}
	calls := []struct {
		name string
		call func() error
	}{
		{"CreateSweep", func() error { _, err := s.CreateSweep(ctx, newSweep(c, 1, sweepMarkets(1)), 1); return err }},
		{"CreateSweep of an unknown customer", func() error {
			_, err := s.CreateSweep(ctx, newSweep(unknownIDs()[1], 1, sweepMarkets(1)), 0)
			return err
		}},
		{"GetSweep", func() error { _, err := s.GetSweep(ctx, sw.ID); return err }},
		{"GetSweep of an unknown id", func() error { _, err := s.GetSweep(ctx, "\xff"); return err }},
		{"ListSweeps", func() error { _, _, err := s.ListSweeps(ctx, c, 0, 0); return err }},
		{"ListSweeps of an unknown customer", func() error { _, _, err := s.ListSweeps(ctx, unknownIDs()[1], 0, 0); return err }},
		{"CountActiveSweeps", func() error { _, err := s.CountActiveSweeps(ctx, c); return err }},
		{"CountActiveSweeps of an unknown customer", func() error { _, err := s.CountActiveSweeps(ctx, unknownIDs()[1]); return err }},
		{"SetSweepStatus", func() error {
			_, err := s.SetSweepStatus(ctx, sw.ID, running, store.SweepCancelled, "")
			return err
		}},
		{"PutSweepShard", func() error {
			_, err := s.PutSweepShard(ctx, sw.ID, sw.Markets[0], sw.TrialCount, trialResults(sw.TrialCount, "x"))
			return err
		}},
		{"ListSweepShards", func() error { _, err := s.ListSweepShards(ctx, sw.ID); return err }},
		{"EachSweepShard", func() error {
			return s.EachSweepShard(ctx, sw.ID, func(store.SweepShard) error { return nil })
		}},
		{"FinishSweep", func() error { return s.FinishSweep(ctx, sw.ID, []byte(`{}`)) }},
		{"DeleteSweepsFinishedBefore", func() error {
			_, err := s.DeleteSweepsFinishedBefore(ctx, done.FinishedAt.Add(time.Hour))
			return err
		}},
	}
	for _, tc := range calls {
		if err := tc.call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: error = %v, want one matching context.Canceled", tc.name, err)
		}
	}

	checkSweep(t, "running sweep", sw, getSweep(t, s, sw.ID))
	checkSweep(t, "done sweep", done, getSweep(t, s, done.ID))
	if _, total, err := s.ListSweeps(t.Context(), c, 0, 0); err != nil || total != 2 {
		t.Errorf("ListSweeps: total %d, err %v; want 2", total, err)
	}
}

// testSweepEachShard: EachSweepShard gives every stored shard of a sweep
// of many markets once, in the order of its markets whatever the order
// they were stored in, with the results stored, and none of another
// sweep's; f may stop it at any shard.
func testSweepEachShard(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	markets := sweepMarkets(23)
	sw := createSweep(t, s, newSweep(c, 2, markets))
	other := createSweep(t, s, newSweep(c, 2, markets))
	var want []string
	for _, i := range []int{22, 5, 0, 13, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16, 17, 18, 19, 21} { // 20 missing
		_, err := s.PutSweepShard(ctx, sw.ID, markets[i], 2, trialResults(2, markets[i]))
		mustOK(t, err, "PutSweepShard "+markets[i])
	}
	_, err := s.PutSweepShard(ctx, other.ID, markets[20], 2, trialResults(2, "other"))
	mustOK(t, err, "PutSweepShard of the other sweep")
	for i, m := range markets {
		if i != 20 {
			want = append(want, m)
		}
	}
	var got []string
	mustOK(t, s.EachSweepShard(ctx, sw.ID, func(sh store.SweepShard) error {
		got = append(got, sh.Market)
		if sh.SweepID != sw.ID || sh.Trials != 2 || string(sh.Results) != string(trialResults(2, sh.Market)) {
			t.Errorf("shard %s: sweep %q, %d trials, results %s", sh.Market, sh.SweepID, sh.Trials, sh.Results)
		}
		return nil
	}), "EachSweepShard")
	if !slices.Equal(got, want) {
		t.Errorf("EachSweepShard markets = %v, want %v", got, want)
	}
	stop := errors.New("stop")
	for _, at := range []int{0, 3, 4, 9, 20} {
		calls := 0
		err := s.EachSweepShard(ctx, sw.ID, func(store.SweepShard) error {
			if calls++; calls > at {
				return stop
			}
			return nil
		})
		if err != stop || calls != at+1 {
			t.Errorf("EachSweepShard stopped at shard %d: %v after %d calls, want f's error after %d", at, err, calls, at+1)
		}
	}
}

// finishedSweep is a DONE sweep of the customer with result.
func finishedSweep(t *testing.T, s store.Store, customerID string, result []byte) store.Sweep {
	t.Helper()
	sw := sweepIn(t, s, customerID, store.SweepRunning)
	mustOK(t, s.FinishSweep(t.Context(), sw.ID, result), "FinishSweep")
	return getSweep(t, s, sw.ID)
}

// writtenResult is what WriteSweepResult writes of the sweep.
func writtenResult(t *testing.T, s store.Store, id string) []byte {
	t.Helper()
	var b bytes.Buffer
	mustOK(t, s.WriteSweepResult(t.Context(), id, &b), "WriteSweepResult")
	return b.Bytes()
}

// checkTrialsPage fails the test unless SweepTrials(offset, limit)
// answers want (the trials' JSON) and total.
func checkTrialsPage(t *testing.T, s store.Store, id string, offset, limit int, want []string, total int) {
	t.Helper()
	got, n, err := s.SweepTrials(t.Context(), id, offset, limit)
	mustOK(t, err, fmt.Sprintf("SweepTrials(%d, %d)", offset, limit))
	gotS := make([]string, len(got))
	for i, b := range got {
		gotS[i] = string(b)
	}
	if n != total || got == nil || !slices.Equal(gotS, want) {
		t.Errorf("SweepTrials(%d, %d) = %q (nil %v), %d; want %q, %d", offset, limit, gotS, got == nil, n, want, total)
	}
}

// testSweepResultParts: a DONE sweep's result is kept byte for byte
// (GetSweep, WriteSweepResult) whatever its spacing and wherever its
// trials stand, and SweepTrials pages the elements of its top-level
// trials array (the first such key), each without the white space around
// it: not a trials key inside another value, not a string holding
// brackets and commas. GetSweepInfo is GetSweep without the result.
func testSweepResultParts(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	tricky := `{"trial":1,"s":"],[\"{,\\","trials":[9]}`
	for _, tc := range []struct {
		name   string
		result string
		trials []string
	}{
		{"compact", `{"objective":"total_pnl","trials":[{"trial":0},{"trial":1},{"trial":2}],"best":{"trials":[7]}}`,
			[]string{`{"trial":0}`, `{"trial":1}`, `{"trial":2}`}},
		{"spaced", " {\n \"best\" : {\"trials\":[7, 8]} ,\t\"trials\" :\r\n[ {\"trial\": 0} ,\n" + tricky + "  ,  3.5e2 , null,\"x\"\n] , \"z\":[]}\n",
			[]string{`{"trial": 0}`, tricky, `3.5e2`, `null`, `"x"`}},
		{"first key only", `{"trials":[[1,2],{}],"trials":[3]}`, []string{`[1,2]`, `{}`}},
		{"escaped key", `{"tri\u0061ls":[true,false]}`, []string{`true`, `false`}},
		{"last", `{"a":{"b":[1,{"c":"]"}]},"trials":[1]}`, []string{`1`}},
		{"empty", `{"trials":[ ],"best":null}`, []string{}},
		{"null", `{"trials":null}`, []string{}},
		{"not an array", `{"trials":{"0":1}}`, []string{}},
		{"none", `{"best":{"trial":3},"z":1}`, []string{}},
		{"not an object", `[{"trials":[1]}]`, []string{}},
		{"a string", `"trials"`, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw := finishedSweep(t, s, c, []byte(tc.result))
			if string(sw.Result) != tc.result {
				t.Errorf("FinishSweep's result = %q, want %q", sw.Result, tc.result)
			}
			got := getSweep(t, s, sw.ID)
			checkSweep(t, "GetSweep", sw, got)
			info, err := s.GetSweepInfo(ctx, sw.ID)
			mustOK(t, err, "GetSweepInfo")
			want := sw
			want.Result = nil
			checkSweep(t, "GetSweepInfo", want, info)
			if w := writtenResult(t, s, sw.ID); string(w) != tc.result {
				t.Errorf("WriteSweepResult wrote %q, want %q", w, tc.result)
			}
			n := len(tc.trials)
			checkTrialsPage(t, s, sw.ID, 0, 0, tc.trials, n)
			checkTrialsPage(t, s, sw.ID, 0, 100, tc.trials, n)
			checkTrialsPage(t, s, sw.ID, n, 1, []string{}, n)
			checkTrialsPage(t, s, sw.ID, n+5, 0, []string{}, n)
			for off := range n {
				for limit := 1; off+limit <= n+1; limit++ {
					checkTrialsPage(t, s, sw.ID, off, limit, tc.trials[off:min(n, off+limit)], n)
				}
			}
		})
	}
}

// testSweepLargeResult: a sweep of thousands of trials of a few kilobytes
// each, as an ENTERPRISE sweep's, is kept whole and paged right at its
// start, middle and end, and written out whole, to a writer taking a few
// bytes at a time too; a writer's error stops the write and is returned.
func testSweepLargeResult(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	const trials = 3000
	var result bytes.Buffer
	trial := func(i int) string {
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"trial":%d,"parameters":[{"path":"/maxLossPercent","value":%d}],"train":{"daily":[`, i, i%50)
		for d := range 60 {
			if d > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"date":"2026-01-%02d","markets":1,"pnl":%d.%03d}`, d%28+1, d*i%97, i%1000)
		}
		b.WriteString(`]},"test":null}`)
		return b.String()
	}
	result.WriteString(`{"objective":"total_pnl","split":"NONE","trials":[`)
	for i := range trials {
		if i > 0 {
			result.WriteByte(',')
		}
		result.WriteString(trial(i))
	}
	result.WriteString(`],"best":{"trial":1234,"per_market":[{"slug":"m","pnl":1.5,"test":false}]},"dsr":0.5,"pbo":null}`)
	want := bytes.Clone(result.Bytes())
	sw := finishedSweep(t, s, c, result.Bytes())
	if got := writtenResult(t, s, sw.ID); !bytes.Equal(got, want) {
		t.Errorf("WriteSweepResult wrote %d bytes, not the %d stored", len(got), len(want))
	}
	if got := getSweep(t, s, sw.ID); !bytes.Equal(got.Result, want) {
		t.Errorf("GetSweep's result is %d bytes, not the %d stored", len(got.Result), len(want))
	}
	for _, page := range [][2]int{{0, 100}, {1234, 10}, {2950, 100}, {2999, 1}, {1500, 1000}} {
		off, limit := page[0], page[1]
		var wantPage []string
		for i := off; i < min(trials, off+limit); i++ {
			wantPage = append(wantPage, trial(i))
		}
		checkTrialsPage(t, s, sw.ID, off, limit, wantPage, trials)
	}

	small := &chunkWriter{max: 7}
	mustOK(t, s.WriteSweepResult(ctx, sw.ID, small), "WriteSweepResult in small writes")
	if !bytes.Equal(small.b, want) {
		t.Errorf("WriteSweepResult in small writes wrote %d bytes, not the %d stored", len(small.b), len(want))
	}
	stop := errors.New("the client went away")
	failing := &chunkWriter{max: 1 << 30, failAfter: len(want) / 2, err: stop}
	if err := s.WriteSweepResult(ctx, sw.ID, failing); !errors.Is(err, stop) {
		t.Errorf("WriteSweepResult to a failing writer: error %v, want its own", err)
	}
}

// chunkWriter keeps what is written, taking at most max bytes at a time,
// and fails with err, short, where it would hold more than failAfter
// bytes (0: never).
type chunkWriter struct {
	b         []byte
	max       int
	failAfter int
	err       error
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), w.max)
		if w.failAfter > 0 {
			k = min(k, max(w.failAfter-len(w.b), 0))
			if k == 0 {
				return n, w.err
			}
		}
		w.b = append(w.b, p[:k]...)
		p, n = p[k:], n+k
	}
	return n, nil
}

// testSweepResultReadsRefused: SweepTrials and WriteSweepResult answer a
// DONE sweep only (ErrConflict, nothing written, for one in any other
// status), an unknown sweep is ErrNotFound for them and for GetSweepInfo,
// a negative page is ErrInvalid; a DONE sweep's page and result are what
// they were after a second FinishSweep is refused, and the returned pages
// are the caller's to change.
func testSweepResultReadsRefused(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	for _, st := range []store.SweepStatus{store.SweepQueued, store.SweepRunning, store.SweepFailed, store.SweepCancelled} {
		sw := sweepIn(t, s, c, st)
		_, _, err := s.SweepTrials(ctx, sw.ID, 0, 10)
		wantErr(t, err, store.ErrConflict, "SweepTrials of a "+string(st)+" sweep")
		var b bytes.Buffer
		err = s.WriteSweepResult(ctx, sw.ID, &b)
		wantErr(t, err, store.ErrConflict, "WriteSweepResult of a "+string(st)+" sweep")
		if b.Len() > 0 {
			t.Errorf("WriteSweepResult of a %s sweep wrote %q", st, b.Bytes())
		}
		info, err := s.GetSweepInfo(ctx, sw.ID)
		mustOK(t, err, "GetSweepInfo")
		checkSweep(t, "GetSweepInfo of a "+string(st)+" sweep", sw, info)
	}
	for _, id := range []string{"sw_aaaaaaaaaaaaaaaa", "", "nope", "sw_\x00", "\xff"} {
		_, err := s.GetSweepInfo(ctx, id)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("GetSweepInfo(%q)", id))
		_, _, err = s.SweepTrials(ctx, id, 0, 10)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("SweepTrials(%q)", id))
		err = s.WriteSweepResult(ctx, id, io.Discard)
		wantErr(t, err, store.ErrNotFound, fmt.Sprintf("WriteSweepResult(%q)", id))
	}
	result := `{"trials":[{"a":1},{"a":2}]}`
	sw := finishedSweep(t, s, c, []byte(result))
	for _, page := range [][2]int{{-1, 1}, {0, -1}} {
		_, _, err := s.SweepTrials(ctx, sw.ID, page[0], page[1])
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("SweepTrials(%d, %d)", page[0], page[1]))
	}
	err := s.FinishSweep(ctx, sw.ID, []byte(`{"trials":[3]}`))
	wantErr(t, err, store.ErrConflict, "a second FinishSweep")
	got, _, err := s.SweepTrials(ctx, sw.ID, 0, 1)
	mustOK(t, err, "SweepTrials")
	got[0][1] = 'X'
	checkTrialsPage(t, s, sw.ID, 0, 0, []string{`{"a":1}`, `{"a":2}`}, 2)
	if w := writtenResult(t, s, sw.ID); string(w) != result {
		t.Errorf("WriteSweepResult wrote %q, want %q", w, result)
	}
}

// testSweepRetentionWhileWritten: DeleteSweepsFinishedBefore called while
// WriteSweepResult writes a sweep's result (from the writer, between its
// parts) spares that sweep, and the result is written whole; another
// sweep past retention goes. A call after the writing deletes the sweep;
// so does one after two overlapping writings, and none between their
// ends.
func testSweepRetentionWhileWritten(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := sweepCustomer(t, s, "ada")
	var result bytes.Buffer
	result.WriteString(`{"objective":"total_pnl","trials":[`)
	for i := range 1000 {
		if i > 0 {
			result.WriteByte(',')
		}
		fmt.Fprintf(&result, `{"trial":%d,"pad":"%s"}`, i, strings.Repeat("x", 200))
	}
	result.WriteString(`],"dsr":null}`)
	want := bytes.Clone(result.Bytes())
	sw := finishedSweep(t, s, c, result.Bytes())
	other := finishedSweep(t, s, c, []byte(`{"trials":[]}`))
	later := other.FinishedAt.Add(100 * 24 * time.Hour)

	var pruned []int
	w := &pruningWriter{at: len(want) / 3, prune: func() error {
		n, err := s.DeleteSweepsFinishedBefore(ctx, later)
		pruned = append(pruned, n)
		return err
	}}
	mustOK(t, s.WriteSweepResult(ctx, sw.ID, w), "WriteSweepResult while a prune runs")
	if !bytes.Equal(w.b, want) {
		t.Errorf("WriteSweepResult wrote %d bytes while a prune ran, not the %d stored", len(w.b), len(want))
	}
	if len(pruned) != 1 || pruned[0] != 1 {
		t.Errorf("the prune during the writing deleted %v sweeps, want [1] (the other one)", pruned)
	}
	_, err := s.GetSweepInfo(ctx, other.ID)
	wantErr(t, err, store.ErrNotFound, "GetSweepInfo of the other sweep, pruned")
	n, err := s.DeleteSweepsFinishedBefore(ctx, later)
	mustOK(t, err, "DeleteSweepsFinishedBefore after the writing")
	if n != 1 {
		t.Errorf("the prune after the writing deleted %d sweeps, want 1", n)
	}
	_, err = s.GetSweepInfo(ctx, sw.ID)
	wantErr(t, err, store.ErrNotFound, "GetSweepInfo of the sweep pruned after its writing")

	// Two writings of one sweep: the second, begun and ended while the
	// first writes, does not give back the first's hold. A prune after
	// the second ended spares the sweep; one after both deletes it.
	sw = finishedSweep(t, s, c, bytes.Clone(want))
	pruned = nil
	var second bytes.Buffer
	w = &pruningWriter{at: len(want) / 3, prune: func() error {
		if err := s.WriteSweepResult(ctx, sw.ID, &second); err != nil {
			return err
		}
		n, err := s.DeleteSweepsFinishedBefore(ctx, later)
		pruned = append(pruned, n)
		return err
	}}
	mustOK(t, s.WriteSweepResult(ctx, sw.ID, w), "WriteSweepResult while a second writing runs, then a prune")
	if !bytes.Equal(w.b, want) || !bytes.Equal(second.Bytes(), want) {
		t.Errorf("two writings wrote %d and %d bytes, not the %d stored", len(w.b), second.Len(), len(want))
	}
	if len(pruned) != 1 || pruned[0] != 0 {
		t.Errorf("the prune after the second writing, the first still writing, deleted %v sweeps, want [0]", pruned)
	}
	n, err = s.DeleteSweepsFinishedBefore(ctx, later)
	mustOK(t, err, "DeleteSweepsFinishedBefore after both writings")
	if n != 1 {
		t.Errorf("the prune after both writings deleted %d sweeps, want 1", n)
	}
}

// pruningWriter keeps what is written, calling prune once, before the
// write that takes it past at bytes.
type pruningWriter struct {
	b     []byte
	at    int
	prune func() error
	done  bool
}

func (w *pruningWriter) Write(p []byte) (int, error) {
	if !w.done && len(w.b)+len(p) > w.at {
		w.done = true
		if err := w.prune(); err != nil {
			return 0, err
		}
	}
	w.b = append(w.b, p...)
	return len(p), nil
}
