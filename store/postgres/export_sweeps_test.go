package postgres

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The sweep queries whose plans the external tests check.
const (
	ListSweepsSQL   = listSweepsSQL
	ActiveSweepsSQL = activeSweepsSQL
	// DeleteFinishedSQL is retention's delete.
	DeleteFinishedSQL = deleteFinishedSQL
	// SweepCapLock is the advisory lock of a customer's CreateSweeps
	// under a cap (with hashtext of the customer's id).
	SweepCapLock = sweepCapLock
)

// The queries of a page of a sweep's trials (SweepTrials).
const (
	SweepTrialsHeadSQL = sweepTrialsHeadSQL
	SweepTrialsSQL     = sweepTrialsSQL
)

// OpenCounting is Open (without its defaults) with every query and batch
// the store sends counted in n: its statements, each a round trip to the
// server.
func OpenCounting(ctx context.Context, databaseURL string, n *atomic.Int64) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	deadline := &queryDeadline{}
	cfg.ConnConfig.Tracer = countingTracer{queryDeadline: deadline, n: n}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{pool: pool, parts: newPartitions(), deadline: deadline}, nil
}

// countingTracer counts the queries and batches it traces.
type countingTracer struct {
	*queryDeadline
	n *atomic.Int64
}

func (c countingTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return c.queryDeadline.TraceQueryStart(ctx, conn, d)
}

func (c countingTracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return c.queryDeadline.TraceBatchStart(ctx, conn, d)
}
