package store

import (
	"context"
	"time"
)

// DefaultQueryTimeout is the bound of each query of work done for
// someone waiting: an api's (the Postgres store's SetQueryTimeout) and a
// worker's replays and sweep shards (WithQueryTimeout). Their queries take
// milliseconds; it is well above the Postgres store's lock_timeout (10 s),
// so that a query waiting on a lock fails as a lock timeout, retried, not
// as a server that does not answer, and above a 24hr market's read on a
// slow disk, and well within the api's wait for a replay (JOB_WAIT).
const DefaultQueryTimeout = 30 * time.Second

// queryTimeoutKey is the context key of WithQueryTimeout's bound.
type queryTimeoutKey struct{}

// WithQueryTimeout returns ctx carrying d as the bound of each query a
// store sends on its behalf: one the server has not answered by then
// fails as ErrUnavailable, as one past a store's own bound does (the
// Postgres store's SetQueryTimeout; the shorter of the two holds). It is
// for work whose queries are all short, done for someone waiting: a
// server that accepts the query and never answers fails it in d rather
// than at ctx's deadline, if any. A store with nothing to wait on (the
// memory store) ignores it. d of 0 or less sets no bound.
func WithQueryTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, queryTimeoutKey{}, d)
}

// QueryTimeout returns the bound WithQueryTimeout set on ctx, if any.
func QueryTimeout(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(queryTimeoutKey{}).(time.Duration)
	return d, ok && d > 0
}
