-- updown schema, version 1.

-- Markets are keyed by slug; id is the compact internal key that snapshot
-- rows refer to (market_id is the upstream's, a string).
create table markets (
    id               bigint generated always as identity unique,
    slug             text primary key,
    market_id        text not null unique,
    event_id         text not null,
    coin             text not null,
    market_type      text not null,
    start_time       timestamptz not null,
    end_time         timestamptz not null,
    coin_price_start double precision,
    coin_price_end   double precision,
    condition_id     text not null,
    clob_token_up    text not null,
    clob_token_down  text not null,
    winner           text,
    final_volume     double precision,
    final_liquidity  double precision,
    resolved_at      timestamptz,
    created_at       timestamptz not null,
    updated_at       timestamptz not null,
    resolved         boolean generated always as (winner is not null) stored
);

-- One index per combination of list filters, each in the listing's order
-- (start_time descending, slug ascending), so a page is an index range scan.
create index markets_by_start on markets (start_time desc, slug);
create index markets_by_coin on markets (coin, start_time desc, slug);
create index markets_by_coin_type on markets (coin, market_type, start_time desc, slug);
create index markets_by_coin_resolved on markets (coin, resolved, start_time desc, slug);
create index markets_by_coin_type_resolved on markets (coin, market_type, resolved, start_time desc, slug);

-- A market's snapshot series: how many snapshots it has and their time
-- span. Appends lock this row, which serialises writers of one market, and
-- readers use the span to prune chunk partitions.
create table snapshot_series (
    market     bigint primary key references markets (id) on delete cascade,
    n          bigint not null default 0,
    first_time timestamptz,
    last_time  timestamptz
);

-- Snapshots, many to a row: a chunk holds n snapshots of one market with
-- times first_time..last_time, packed by the chunk codec (codec.go). head
-- holds times and prices; books the order books, so listings without books
-- never read them. Chunks of a market never overlap in time. Partitions
-- are monthly by first_time and created on demand by the writer
-- (snapshot_chunks_pYYYYMM), so old months are dropped whole.
create table snapshot_chunks (
    market     bigint not null,
    first_time timestamptz not null,
    last_time  timestamptz not null,
    n          integer not null check (n > 0),
    head       bytea not null,
    books      bytea not null,
    primary key (market, first_time) include (n, last_time)
) partition by range (first_time);

-- TOAST compresses the packed chunks a little further (repeated books);
-- lz4 does it at a fraction of pglz's cost. Partitions inherit the setting.
-- Servers built without lz4 keep the default.
do $$
begin
    execute 'alter table snapshot_chunks alter column head set compression lz4, alter column books set compression lz4';
exception when feature_not_supported or syntax_error then
    raise notice 'lz4 unavailable, chunks use the default TOAST compression';
end
$$;

create table customers (
    id         uuid primary key,
    email      text not null unique,
    name       text not null,
    tier       text not null,
    created_at timestamptz not null,
    updated_at timestamptz not null
);

create index customers_by_created on customers (created_at, id);

create table api_keys (
    id          uuid primary key,
    customer_id uuid not null references customers (id) on delete cascade,
    prefix      text not null,
    hash        bytea not null unique,
    created_at  timestamptz not null,
    revoked_at  timestamptz
);

create index api_keys_by_customer on api_keys (customer_id, created_at, id);

-- Exchange depth history, one row per snapshot; book packs bids and asks
-- with the chunk codec's level encoding.
create table depth_snapshots (
    symbol         text not null,
    kind           text not null,
    time           timestamptz not null,
    coin_price     double precision not null,
    last_update_id bigint not null,
    book           bytea not null,
    primary key (symbol, kind, time)
);
