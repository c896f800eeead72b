package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/updown/updown/store"
)

// Heavy reads in flight per customer (DESIGN 4, fairness between
// customers; issue 28).
//
// A heavy read is a request whose answer reads or writes a lot: a chart
// series (a whole market), a snapshot page with its books, a CSV or
// Parquet export, a page of depth history. A customer answers at most its
// plan's cap of them at once, counted like its jobs in flight (jobcap.go):
// a sorted set per customer in Redis, shared by every api process, with
// a slot per request taken by the same script, atomically, and given back
// when the answer has been written (so a slow reader holds its slot). A
// request over the cap is 429 RATE_LIMIT_EXCEEDED with details.limit
// "concurrent_reads" and Retry-After: 1 at once, never queued: one
// customer's burst then costs the database at most its cap of reads, and
// another customer's request finds the store free.
//
// A slot lapses on its own readSlotLease after it was taken, so that a
// process that dies holding slots does not keep them. Without Redis there
// is no cap, as there are no rate limits; when Redis fails the request
// goes on uncapped (logged as the rate limiter logs).
//
// Beside the customers' caps, a process answers at most Config.HeavyReads
// heavy store reads at once (heavyGate), whoever asks, so that heavy
// reads never take every connection of the pool: light queries (a
// market, a page without books, a replay's look-ups) always find one.

// readSlotLease is how long a heavy read's slot lives when nobody gives
// it back.
const readSlotLease = 2 * time.Minute

// readSlotKey is the customer's set of heavy reads in flight; the hash
// tag keeps it in the slot of the customer's rate-limit keys.
func readSlotKey(customerID string) string {
	return rateKeyPrefix + customerID + "}:reads"
}

// readCap is the caller's cap on heavy reads in flight (0: none):
// Config.ReadsInFlight's entry for the tier when there is one, else the
// plan's.
func (s *Server) readCap(p Plan) int {
	if n, ok := s.cfg.ReadsInFlight[p.Tier]; ok {
		return n
	}
	return p.ReadsInFlight
}

// heavyRead reports whether the request is a heavy read.
func (s *Server) heavyRead(ctx huma.Context) bool {
	op := ctx.Operation()
	switch {
	case op.OperationID == "get-market-series":
		return true
	case strings.HasPrefix(op.OperationID, "list-btc-") && strings.HasSuffix(op.OperationID, "-snapshots"): // depth history
		return true
	case csvRoute(op.Path) && s.wantsRows(ctx.Header("Accept")): // exports
		return true
	case op.OperationID == "list-snapshots" || op.OperationID == "list-snapshots-by-market-id":
		books, _ := strconv.ParseBool(ctx.Query("include_orderbook"))
		return books
	}
	return false
}

// capHeavyReads is the middleware that holds a heavy read's slot from
// before its handler until its answer is written, or answers 429.
func (s *Server) capHeavyReads(ctx huma.Context, next func(huma.Context)) {
	p := principalFrom(ctx.Context())
	if p.Customer.ID == "" || !s.heavyRead(ctx) {
		next(ctx)
		return
	}
	release, err := s.takeReadSlot(ctx.Context(), p)
	if err != nil {
		r, w := humago.Unwrap(ctx)
		writeError(w, r, s.log, err)
		return
	}
	if release != nil {
		defer release()
	}
	next(ctx)
}

// takeReadSlot takes a heavy-read slot for the caller, or answers 429
// RATE_LIMIT_EXCEEDED with details.limit "concurrent_reads". release
// gives the slot back (nil when nothing was taken).
func (s *Server) takeReadSlot(ctx context.Context, p principal) (release func(), err error) {
	limit := s.readCap(p.Plan)
	if s.cfg.Redis == nil || limit <= 0 {
		return nil, nil
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	now := time.Now()
	key := readSlotKey(p.Customer.ID)
	held, _, err := s.takeSlot(ctx, s.cfg.RedisTimeout, key, limit, id, now, now.Add(readSlotLease))
	if err != nil {
		if !s.clientWentAway(ctx, "take a read slot", err) && s.limiter != nil {
			s.limiter.warn(ctx, s.log, p.Customer.ID, fmt.Errorf("read slots: %w", err))
		}
		return nil, nil
	}
	if !held {
		e := Errorf(http.StatusTooManyRequests, CodeRateLimited,
			"too many heavy reads in flight: the %s plan answers at most %d chart series, snapshot pages with books, "+
				"CSV or Parquet exports or depth history pages at once per customer; retry when one has finished",
			p.Plan.Tier, limit)
		e = e.With("limit", "concurrent_reads").With("max", limit).With("retry_after", 1).With("upgrade_url", upgradeURL)
		e.GetHeaders().Set("Retry-After", "1")
		return nil, e
	}
	return func() {
		// Not the request's context: a slot is given back whatever became
		// of the request.
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.cfg.Redis.ZRem(rctx, key, id).Err(); err != nil {
			s.log.Warn("give back a read slot (it lapses on its own)", "customer_id", p.Customer.ID, "err", err)
		}
	}, nil
}

// DefaultHeavyReads is the process's bound on heavy store reads at once
// when Config.HeavyReads is 0: half the Postgres pool's default size
// (postgres.DefaultMaxConns, max(16, 4×GOMAXPROCS)), leaving the other
// half to light queries. It is above a PRO customer's cap, so that one
// customer at its cap leaves heavy reads for others too.
func DefaultHeavyReads() int {
	return max(16, 4*runtime.GOMAXPROCS(0)) / 2
}

// heavyGate bounds the heavy store reads a process runs at once. A read
// waits for its turn (its customer's cap has already bounded how many it
// can send); light reads pass through.
type heavyGate struct {
	store.Store
	sem chan struct{}
}

func (g heavyGate) enter(ctx context.Context) (leave func(), err error) {
	select {
	case g.sem <- struct{}{}:
		return func() { <-g.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ListSnapshots is heavy when it reads the whole market or the books.
func (g heavyGate) ListSnapshots(ctx context.Context, slug string, q store.SnapshotQuery) ([]store.Snapshot, int, error) {
	if q.Limit != 0 && !q.WithBooks {
		return g.Store.ListSnapshots(ctx, slug, q)
	}
	leave, err := g.enter(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("wait for a heavy read: %w", err)
	}
	defer leave()
	return g.Store.ListSnapshots(ctx, slug, q)
}

// ListDepth is always heavy: every row carries its levels.
func (g heavyGate) ListDepth(ctx context.Context, f store.DepthFilter) ([]store.DepthSnapshot, int, error) {
	leave, err := g.enter(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("wait for a heavy read: %w", err)
	}
	defer leave()
	return g.Store.ListDepth(ctx, f)
}

// documentReadCap says on every route that can be a heavy read what its
// 429 may mean beside the rate limits. Call it after documentCSV.
func documentReadCap(doc *huma.OpenAPI) {
	for path, item := range doc.Paths {
		op := item.Get
		if op == nil || op.Responses["429"] == nil {
			continue
		}
		id := op.OperationID
		if id != "get-market-series" && !csvRoute(path) && !(strings.HasPrefix(id, "list-btc-") && strings.HasSuffix(id, "-snapshots")) {
			continue
		}
		r := *op.Responses["429"]
		r.Description = "Too Many Requests: RATE_LIMIT_EXCEEDED past the rate limits, or with details.limit \"concurrent_reads\" " +
			"when the customer already has its plan's cap of heavy reads answering (chart series, snapshot pages with books, " +
			"CSV or Parquet answers, depth history: STARTER 2, PRO, PRO_TRIAL and SUITE 4, ENTERPRISE 16 at once); Retry-After says when to retry."
		op.Responses["429"] = &r
	}
}
