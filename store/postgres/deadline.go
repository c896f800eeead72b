package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/updown/updown/store"
)

// queryDeadline bounds each query and batch with SetQueryTimeout's
// duration, or store.WithQueryTimeout's of the call's context when that is
// shorter, on the pgx tracer hooks whose context the rest of the call
// uses, and the taking of a connection from the pool before it
// (pgxpool's AcquireTracer): the pool pings each connection idle over a
// second before handing it out, one at a time, each ping waiting up to
// its PingTimeout, so that a frozen server held a call for that times the
// idle connections before its query's bound began. Without it a query sent on a live connection to a server that
// stopped answering (frozen, a stuck pooler, a network that drops
// packets) waited as long as its context: an api request for ever, or
// until its client gave up, and then it was logged as a 500.
type queryDeadline struct{ timeout atomic.Int64 }

var (
	_ pgx.QueryTracer       = (*queryDeadline)(nil)
	_ pgx.BatchTracer       = (*queryDeadline)(nil)
	_ pgxpool.AcquireTracer = (*queryDeadline)(nil)
)

// cancelKey holds the cancel function of the deadline a call started.
type cancelKey struct{}

func (q *queryDeadline) start(ctx context.Context) context.Context {
	d := time.Duration(q.timeout.Load())
	if cd, ok := store.QueryTimeout(ctx); ok && (d <= 0 || cd < d) {
		d = cd // the bound of the work the query is for (store.WithQueryTimeout)
	}
	if d <= 0 {
		return ctx
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ctx // an earlier deadline of the caller's stands
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return context.WithValue(ctx, cancelKey{}, cancel)
}

func (q *queryDeadline) end(ctx context.Context) {
	if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
}

func (q *queryDeadline) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return q.start(ctx)
}

func (q *queryDeadline) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	q.end(ctx)
}

func (q *queryDeadline) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	return q.start(ctx)
}

func (q *queryDeadline) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	q.end(ctx)
}

func (q *queryDeadline) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return q.start(ctx)
}

func (q *queryDeadline) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (q *queryDeadline) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	q.end(ctx)
}

// SetQueryTimeout bounds every query and batch the store sends from now
// on to d (0 or less: no bound, the default): one that has not finished
// by then fails as store.ErrUnavailable, its connection closed. It is for
// processes that answer requests (the api), whose reads take
// milliseconds; a migration, an import or a collector's writes may
// rightly take long, and are not bounded unless their process sets it.
// The bound holds for taking a connection from the pool too (its pings
// of idle connections, each within DefaultConnectTimeout, and the making
// of new ones), and then again for the query on it.
func (s *Store) SetQueryTimeout(d time.Duration) { s.deadline.timeout.Store(int64(d)) }
