package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// seedRunsTable keeps every `updown seed` run: started when it begins
// writing, finished when it wrote everything. A seed writes tens of
// thousands of rows in many statements, not one transaction, so an
// interrupted one (Ctrl-C, a lost connection) leaves part of its data:
// the next run finds the unfinished row and says so, where it said
// nothing and the database served markets without snapshots, trades or
// depth history as if they were all the data.
const seedRunsTable = "updown_seed_runs"

// seedRun is a row of seedRunsTable.
type seedRun struct {
	id        int64
	seed      int64
	perMarket int64
	startedAt time.Time
}

// beginSeedRun records a seed run starting, and returns it with the
// earlier runs that did not finish.
func beginSeedRun(ctx context.Context, pool *pgxpool.Pool, seed int64, perMarket int) (run seedRun, unfinished []seedRun, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Two seeds starting at once must not both create the table.
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock(hashtext('updown seed runs'))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `create table if not exists `+seedRunsTable+` (
			id bigserial primary key,
			seed bigint not null,
			snapshots_per_market bigint not null,
			started_at timestamptz not null default now(),
			finished_at timestamptz)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `select id, seed, snapshots_per_market, started_at from `+seedRunsTable+
			` where finished_at is null order by id`)
		if err != nil {
			return err
		}
		unfinished, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (seedRun, error) {
			var s seedRun
			return s, r.Scan(&s.id, &s.seed, &s.perMarket, &s.startedAt)
		})
		if err != nil {
			return err
		}
		run = seedRun{seed: seed, perMarket: int64(perMarket)}
		return tx.QueryRow(ctx, `insert into `+seedRunsTable+` (seed, snapshots_per_market) values ($1, $2) returning id, started_at`,
			seed, perMarket).Scan(&run.id, &run.startedAt)
	})
	if err != nil {
		return seedRun{}, nil, fmt.Errorf("seed: record the run in %s: %w", seedRunsTable, err)
	}
	return run, unfinished, nil
}

// finishSeedRun marks run finished, and with it the unfinished earlier
// runs of the same data (seed and cadence), which it has completed.
func finishSeedRun(ctx context.Context, pool *pgxpool.Pool, run seedRun) error {
	_, err := pool.Exec(ctx, `update `+seedRunsTable+` set finished_at = now()
		where id = $1 or (finished_at is null and id < $1 and seed = $2 and snapshots_per_market = $3)`, run.id, run.seed, run.perMarket)
	if err != nil {
		return fmt.Errorf("seed: all data written, but marking the run finished in %s failed: %w", seedRunsTable, err)
	}
	return nil
}

// tellUnfinished says, before a run writes, what earlier runs left
// unfinished and what this run does about it.
func tellUnfinished(w io.Writer, unfinished []seedRun, run seedRun) {
	if len(unfinished) == 0 {
		return
	}
	var other []string
	for _, u := range unfinished {
		if u.seed != run.seed || u.perMarket != run.perMarket {
			other = append(other, fmt.Sprintf("--seed %d --snapshots-per-market %d", u.seed, u.perMarket))
		}
	}
	last := unfinished[len(unfinished)-1]
	fmt.Fprintf(w, "seed: an earlier updown seed (--seed %d --snapshots-per-market %d, started %s) did not finish "+
		"(interrupted, failed, or still running): this database holds all its markets, but some without their "+
		"snapshots, trades or gaps, and maybe without the exchange depth history.\n",
		last.seed, last.perMarket, last.startedAt.UTC().Format(time.RFC3339))
	if len(other) == 0 {
		fmt.Fprintln(w, "seed: this run writes what is missing (a seed writes nothing twice); to start over instead, stop it and drop and recreate the database.")
		return
	}
	fmt.Fprintf(w, "seed: this run generates other data (--seed %d --snapshots-per-market %d) than the unfinished %s: "+
		"its markets replace those, but snapshots already stored are kept, a mix of both; to finish the earlier one, "+
		"run it with its flags, or drop and recreate the database to start over.\n",
		run.seed, run.perMarket, strings.Join(other, ", "))
}
