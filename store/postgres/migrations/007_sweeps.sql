-- Parameter sweeps (DESIGN 14) and the results of their shards, kept until
-- the service's retention deletes them (30 days after they finish).
--
-- The request and the result are json, not jsonb: the store hands back the
-- bytes it was given (jsonb would reorder keys and drop duplicates) and
-- nothing queries inside them; json still checks that they are JSON.
create table sweeps (
    id            text primary key,                 -- sw_ and 16 random characters
    customer_id   uuid not null references customers (id) on delete cascade,
    status        text not null
                  check (status in ('QUEUED', 'RUNNING', 'DONE', 'FAILED', 'CANCELLED')),
    request       json not null,
    trial_count   integer not null check (trial_count > 0),
    markets       text[] not null check (cardinality(markets) > 0), -- slugs in start_time order
    replays_total bigint not null,
    replays_done  bigint not null default 0 check (replays_done between 0 and replays_total),
    result        json,
    error         text not null default '',
    created_at    timestamptz not null,
    updated_at    timestamptz not null,
    finished_at   timestamptz,
    check (replays_total = trial_count::bigint * cardinality(markets)),
    check ((result is not null) = (status = 'DONE')),
    check ((finished_at is not null) = (status in ('DONE', 'FAILED', 'CANCELLED')))
);

-- A customer's sweeps newest first, the listing's order.
create index sweeps_by_customer on sweeps (customer_id, created_at desc, id desc);

-- Sweeps in flight, counted per customer for the concurrency cap.
create index sweeps_active on sweeps (customer_id) where status in ('QUEUED', 'RUNNING');

-- Finished sweeps by age, for retention.
create index sweeps_finished on sweeps (finished_at) where finished_at is not null;

-- One row per (sweep, market): the key makes a repeated shard a no-op.
-- position is the market's index in the sweep's markets, the listing's
-- order. The results (JSON, one entry per trial) are bytea: they are the
-- volume (up to a few megabytes a shard), written once and read whole by
-- the sweep's aggregation, never queried inside, so the server neither
-- parses nor re-encodes them; TOAST compresses them.
create table sweep_shards (
    sweep_id   text not null references sweeps (id) on delete cascade,
    market     text not null,
    position   integer not null check (position >= 0),
    trials     integer not null check (trials > 0),
    results    bytea not null,
    created_at timestamptz not null,
    primary key (sweep_id, market),
    unique (sweep_id, position)
);

-- lz4 where the server has it, as for the snapshot chunks (001).
do $$
begin
    execute 'alter table sweep_shards alter column results set compression lz4';
exception when feature_not_supported or syntax_error then
    raise notice 'lz4 unavailable, shard results use the default TOAST compression';
end
$$;
