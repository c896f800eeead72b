package memory

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/updown/updown/store"
)

var _ store.SweepStore = (*Store)(nil)

// sweepTable is the store's sweeps and their shards, under one lock: a
// shard's put, its count and the status it depends on are one step, as in
// a transaction. Its zero value is empty and ready.
type sweepTable struct {
	mu         sync.Mutex
	byID       map[string]*sweepEntry
	byCustomer map[string][]*sweepEntry
}

// sweepEntry is one sweep as kept, with its shards.
type sweepEntry struct {
	sw       store.Sweep
	position map[string]int // market → its index in sw.Markets
	shards   map[string]store.SweepShard
	// trials are a DONE sweep's trials, the elements of its result's
	// trials array (store.CutSweepResult), sharing its bytes, which no
	// one changes once it is DONE: a page of them is a slice.
	trials [][]byte
	// writing counts the WriteSweepResults writing its result: while
	// there are any, DeleteSweepsFinishedBefore spares the sweep.
	writing int
}

// CreateSweep stores a new QUEUED sweep. The cap's count and the insert
// are one step under the table's lock.
func (s *Store) CreateSweep(ctx context.Context, sw store.Sweep, maxActive int) (store.Sweep, error) {
	const op = "create sweep"
	if err := live(ctx, op); err != nil {
		return store.Sweep{}, err
	}
	if err := sw.Check(); err != nil {
		return store.Sweep{}, fmt.Errorf("memory: %s: %w", op, err)
	}
	if err := store.CheckSweepCap(maxActive); err != nil {
		return store.Sweep{}, fmt.Errorf("memory: %s: %w", op, err)
	}
	if err := s.customerExists(sw.CustomerID); err != nil {
		return store.Sweep{}, fmt.Errorf("memory: %s: customer %q: %w", op, sw.CustomerID, err)
	}
	e := &sweepEntry{
		sw: store.Sweep{
			ID:           store.NewSweepID(),
			CustomerID:   sw.CustomerID,
			Status:       store.SweepQueued,
			Request:      bytes.Clone(sw.Request),
			TrialCount:   sw.TrialCount,
			Markets:      slices.Clone(sw.Markets),
			ReplaysTotal: sw.TrialCount * len(sw.Markets),
		},
		position: make(map[string]int, len(sw.Markets)),
		shards:   map[string]store.SweepShard{},
	}
	for i, m := range sw.Markets {
		e.position[m] = i
	}

	t := &s.sweeps
	t.mu.Lock()
	defer t.mu.Unlock()
	// Stamped under the lock: a customer's sweeps are in the order they
	// were stored, and the oldest a plan keeps are the ones stored first.
	e.sw.CreatedAt = s.clock()
	e.sw.UpdatedAt = e.sw.CreatedAt
	if t.byID == nil {
		t.byID, t.byCustomer = map[string]*sweepEntry{}, map[string][]*sweepEntry{}
	}
	if maxActive > 0 {
		n := 0
		for _, other := range t.byCustomer[sw.CustomerID] {
			if other.sw.Status.Active() {
				n++
			}
		}
		if n >= maxActive {
			return store.Sweep{}, fmt.Errorf("memory: %s: customer %q has %d sweeps in flight, its cap: %w", op, sw.CustomerID, n, store.ErrSweepsInFlight)
		}
	}
	if _, taken := t.byID[e.sw.ID]; taken {
		return store.Sweep{}, fmt.Errorf("memory: %s: id %q: %w", op, e.sw.ID, store.ErrConflict)
	}
	t.byID[e.sw.ID] = e
	t.byCustomer[sw.CustomerID] = append(t.byCustomer[sw.CustomerID], e)
	return cloneSweep(e.sw, true), nil
}

// GetSweep returns the sweep with the id.
func (s *Store) GetSweep(ctx context.Context, id string) (store.Sweep, error) {
	return s.getSweep(ctx, id, true)
}

// GetSweepInfo returns the sweep with the id without its result.
func (s *Store) GetSweepInfo(ctx context.Context, id string) (store.Sweep, error) {
	return s.getSweep(ctx, id, false)
}

// getSweep is GetSweep, with the result when withResult.
func (s *Store) getSweep(ctx context.Context, id string, withResult bool) (store.Sweep, error) {
	op := fmt.Sprintf("get sweep %q", id)
	if err := live(ctx, op); err != nil {
		return store.Sweep{}, err
	}
	t := &s.sweeps
	t.mu.Lock()
	defer t.mu.Unlock()
	e, err := t.entry(op, id)
	if err != nil {
		return store.Sweep{}, err
	}
	return cloneSweep(e.sw, withResult), nil
}

// doneSweep returns the DONE sweep with the id, its result and its
// trials, which are never changed once it is DONE and may be read
// without the lock.
//
// With hold, the sweep is counted as being written (sweepEntry.writing)
// in the same lock, so that no prune comes between; the caller gives it
// back with release.
func (s *Store) doneSweep(ctx context.Context, op, id string, hold bool) (result []byte, trials [][]byte, release func(), err error) {
	if err := live(ctx, op); err != nil {
		return nil, nil, nil, err
	}
	t := &s.sweeps
	t.mu.Lock()
	defer t.mu.Unlock()
	e, err := t.entry(op, id)
	if err != nil {
		return nil, nil, nil, err
	}
	if e.sw.Status != store.SweepDone {
		return nil, nil, nil, fmt.Errorf("memory: %s: the sweep is %s, not DONE: %w", op, e.sw.Status, store.ErrConflict)
	}
	release = func() {}
	if hold {
		e.writing++
		release = func() {
			t.mu.Lock()
			e.writing--
			t.mu.Unlock()
		}
	}
	return e.sw.Result, e.trials, release, nil
}

// SweepTrials returns a page of a DONE sweep's trials: copies of the
// page's, not of the result.
func (s *Store) SweepTrials(ctx context.Context, id string, offset, limit int) ([][]byte, int, error) {
	op := fmt.Sprintf("list trials of sweep %q", id)
	if limit < 0 || offset < 0 {
		return nil, 0, fmt.Errorf("memory: %s: limit %d, offset %d: want neither negative: %w", op, limit, offset, store.ErrInvalid)
	}
	_, trials, _, err := s.doneSweep(ctx, op, id, false)
	if err != nil {
		return nil, 0, err
	}
	end := len(trials)
	if limit > 0 {
		end = min(end, offset+limit)
	}
	page := [][]byte{}
	for i := offset; i < end; i++ {
		page = append(page, bytes.Clone(store.TrimJSONSpace(trials[i])))
	}
	return page, len(trials), nil
}

// WriteSweepResult writes a DONE sweep's result to w, which it already
// holds whole, without the lock; the sweep is spared by
// DeleteSweepsFinishedBefore meanwhile, as Postgres spares it.
func (s *Store) WriteSweepResult(ctx context.Context, id string, w io.Writer) error {
	op := fmt.Sprintf("write the result of sweep %q", id)
	result, _, release, err := s.doneSweep(ctx, op, id, true)
	if err != nil {
		return err
	}
	defer release()
	_, err = w.Write(result)
	return err
}

// entry returns the sweep with the id; the caller holds t.mu.
func (t *sweepTable) entry(op, id string) (*sweepEntry, error) {
	e, ok := t.byID[id]
	if !ok {
		return nil, fmt.Errorf("memory: %s: %w", op, store.ErrNotFound)
	}
	return e, nil
}

// ListSweeps returns one page of the customer's sweeps, newest first.
func (s *Store) ListSweeps(ctx context.Context, customerID string, limit, offset int) ([]store.Sweep, int, error) {
	op := fmt.Sprintf("list sweeps of customer %q", customerID)
	if err := live(ctx, op); err != nil {
		return nil, 0, err
	}
	if limit < 0 || offset < 0 {
		return nil, 0, fmt.Errorf("memory: %s: limit %d, offset %d: %w", op, limit, offset, store.ErrInvalid)
	}
	t := &s.sweeps
	t.mu.Lock()
	mine := slices.Clone(t.byCustomer[customerID])
	all := make([]store.Sweep, len(mine))
	for i, e := range mine {
		all[i] = e.sw // shares slices with the entry: cloned below, under the lock
	}
	slices.SortFunc(all, func(a, b store.Sweep) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	page := all[min(offset, len(all)):]
	if limit > 0 && limit < len(page) {
		page = page[:limit]
	}
	out := make([]store.Sweep, len(page))
	for i, sw := range page {
		out[i] = cloneSweep(sw, false)
	}
	t.mu.Unlock()
	return out, len(all), nil
}

// CountActiveSweeps counts the customer's QUEUED and RUNNING sweeps.
func (s *Store) CountActiveSweeps(ctx context.Context, customerID string) (int, error) {
	if err := live(ctx, fmt.Sprintf("count active sweeps of customer %q", customerID)); err != nil {
		return 0, err
	}
	t := &s.sweeps
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, e := range t.byCustomer[customerID] {
		if e.sw.Status.Active() {
			n++
		}
	}
	return n, nil
}

// SetSweepStatus moves the sweep from one of from to to.
func (s *Store) SetSweepStatus(ctx context.Context, id string, from []store.SweepStatus, to store.SweepStatus, errText string) (store.Sweep, error) {
	op := fmt.Sprintf("set status of sweep %q to %s", id, to)
	if err := live(ctx, op); err != nil {
		return store.Sweep{}, err
	}
	if err := store.CheckSweepTransition(from, to, errText); err != nil {
		return store.Sweep{}, fmt.Errorf("memory: %s: %w", op, err)
	}
	return s.transition(op, id, from, func(e *sweepEntry, now time.Time) {
		sw := &e.sw
		if sw.Status == to {
			return
		}
		sw.Status, sw.Error, sw.UpdatedAt = to, errText, now
		if to.Final() {
			sw.FinishedAt = &now
		}
	})
}

// FinishSweep moves a RUNNING sweep to DONE with its result.
func (s *Store) FinishSweep(ctx context.Context, id string, result []byte) error {
	op := fmt.Sprintf("finish sweep %q", id)
	if err := live(ctx, op); err != nil {
		return err
	}
	if err := store.CheckSweepJSON("result", result); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	result = bytes.Clone(result)
	cut, _ := store.CutSweepResult(result)
	_, err := s.transition(op, id, []store.SweepStatus{store.SweepRunning}, func(e *sweepEntry, now time.Time) {
		sw := &e.sw
		sw.Status, sw.Result, sw.UpdatedAt, sw.FinishedAt = store.SweepDone, result, now, &now
		e.trials = cut.Trials
	})
	return err
}

// transition applies change to the sweep if its status is one of from
// (ErrConflict otherwise), under the lock, and returns it without its
// result: a sweep in a status it leaves (QUEUED, RUNNING) has none, but
// the one FinishSweep gives it, which FinishSweep does not answer.
func (s *Store) transition(op, id string, from []store.SweepStatus, change func(e *sweepEntry, now time.Time)) (store.Sweep, error) {
	t := &s.sweeps
	t.mu.Lock()
	defer t.mu.Unlock()
	e, err := t.entry(op, id)
	if err != nil {
		return store.Sweep{}, err
	}
	if !slices.Contains(from, e.sw.Status) {
		return store.Sweep{}, fmt.Errorf("memory: %s: the sweep is %s, not %v: %w", op, e.sw.Status, from, store.ErrConflict)
	}
	change(e, s.clock())
	return cloneSweep(e.sw, false), nil
}

// PutSweepShard stores a shard's results once and counts its replays.
func (s *Store) PutSweepShard(ctx context.Context, sweepID, market string, trials int, results []byte) (store.Sweep, error) {
	op := fmt.Sprintf("put shard %q of sweep %q", market, sweepID)
	if err := live(ctx, op); err != nil {
		return store.Sweep{}, err
	}
	if err := store.CheckSweepShard(results); err != nil {
		return store.Sweep{}, fmt.Errorf("memory: %s: %w", op, err)
	}
	t := &s.sweeps
	t.mu.Lock()
	defer t.mu.Unlock()
	e, err := t.entry(op, sweepID)
	if err != nil {
		return store.Sweep{}, err
	}
	switch _, ok := e.position[market]; {
	case !ok:
		return store.Sweep{}, fmt.Errorf("memory: %s: the market is not one of the sweep's: %w", op, store.ErrInvalid)
	case trials != e.sw.TrialCount:
		return store.Sweep{}, fmt.Errorf("memory: %s: %d trials, the sweep has %d: %w", op, trials, e.sw.TrialCount, store.ErrInvalid)
	case !e.sw.Status.Active():
		return store.Sweep{}, fmt.Errorf("memory: %s: the sweep is %s: %w", op, e.sw.Status, store.ErrConflict)
	}
	if _, done := e.shards[market]; !done {
		now := s.clock()
		e.shards[market] = store.SweepShard{SweepID: sweepID, Market: market, Trials: trials,
			Results: bytes.Clone(results), CreatedAt: now}
		e.sw.ReplaysDone += trials
		e.sw.UpdatedAt = now
	}
	return cloneSweep(e.sw, true), nil
}

// ListSweepShards returns the sweep's shards in its markets' order.
func (s *Store) ListSweepShards(ctx context.Context, sweepID string) ([]store.SweepShard, error) {
	op := fmt.Sprintf("list shards of sweep %q", sweepID)
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	t := &s.sweeps
	t.mu.Lock()
	defer t.mu.Unlock()
	e, err := t.entry(op, sweepID)
	if err != nil {
		return nil, err
	}
	out := make([]store.SweepShard, 0, len(e.shards))
	for _, m := range e.sw.Markets {
		if sh, ok := e.shards[m]; ok {
			sh.Results = bytes.Clone(sh.Results)
			out = append(out, sh)
		}
	}
	return out, nil
}

// EachSweepShard calls f with each of the sweep's shards, in its
// markets' order, a copy of one at a time, without the lock.
func (s *Store) EachSweepShard(ctx context.Context, sweepID string, f func(store.SweepShard) error) error {
	op := fmt.Sprintf("list shards of sweep %q", sweepID)
	if err := live(ctx, op); err != nil {
		return err
	}
	t := &s.sweeps
	t.mu.Lock()
	e, err := t.entry(op, sweepID)
	if err != nil {
		t.mu.Unlock()
		return err
	}
	var markets []string
	for _, m := range e.sw.Markets {
		if _, ok := e.shards[m]; ok {
			markets = append(markets, m)
		}
	}
	t.mu.Unlock()
	for _, m := range markets {
		t.mu.Lock()
		sh, ok := e.shards[m]
		sh.Results = bytes.Clone(sh.Results)
		t.mu.Unlock()
		if !ok { // deleted meanwhile, with its sweep
			continue
		}
		if err := f(sh); err != nil {
			return err
		}
	}
	return nil
}

// DeleteSweepsFinishedBefore deletes the sweeps finished before t, with
// their shards.
func (s *Store) DeleteSweepsFinishedBefore(ctx context.Context, before time.Time) (int, error) {
	if err := live(ctx, "delete finished sweeps"); err != nil {
		return 0, err
	}
	before = normTime(before)
	t := &s.sweeps
	t.mu.Lock()
	defer t.mu.Unlock()
	gone := func(e *sweepEntry) bool {
		return e.sw.FinishedAt != nil && e.sw.FinishedAt.Before(before) && e.writing == 0
	}
	n := 0
	for id, e := range t.byID {
		if gone(e) {
			delete(t.byID, id)
			n++
		}
	}
	if n > 0 {
		for c, es := range t.byCustomer {
			if es = slices.DeleteFunc(es, gone); len(es) == 0 {
				delete(t.byCustomer, c)
			} else {
				t.byCustomer[c] = es
			}
		}
	}
	return n, nil
}

// cloneSweep returns a copy of sw that shares nothing with it, without
// its result unless withResult.
func cloneSweep(sw store.Sweep, withResult bool) store.Sweep {
	sw.Request = bytes.Clone(sw.Request)
	sw.Markets = slices.Clone(sw.Markets)
	if withResult {
		sw.Result = bytes.Clone(sw.Result)
	} else {
		sw.Result = nil // not cloned first: a result may be a hundred megabytes
	}
	sw.FinishedAt = clonePtr(sw.FinishedAt)
	return sw
}

// StoredShardMarkets returns the markets of the sweep's stored shards, in
// no order, without their results (worker.SweepResumer); none for an
// unknown sweep.
func (s *Store) StoredShardMarkets(ctx context.Context, sweepID string) ([]string, error) {
	if err := live(ctx, fmt.Sprintf("list the stored shards of sweep %q", sweepID)); err != nil {
		return nil, err
	}
	tb := &s.sweeps
	tb.mu.Lock()
	defer tb.mu.Unlock()
	out := []string{}
	if e, ok := tb.byID[sweepID]; ok {
		for m := range e.shards {
			out = append(out, m)
		}
	}
	return out, nil
}

// ListStalledSweeps returns the QUEUED and RUNNING sweeps last updated
// before t, oldest first, without their results (worker.SweepResumer).
func (s *Store) ListStalledSweeps(ctx context.Context, t time.Time) ([]store.Sweep, error) {
	if err := live(ctx, "list stalled sweeps"); err != nil {
		return nil, err
	}
	tb := &s.sweeps
	tb.mu.Lock()
	defer tb.mu.Unlock()
	out := []store.Sweep{}
	for _, e := range tb.byID {
		if e.sw.Status.Active() && e.sw.UpdatedAt.Before(t) {
			out = append(out, cloneSweep(e.sw, false))
		}
	}
	slices.SortFunc(out, func(a, b store.Sweep) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	return out, nil
}
