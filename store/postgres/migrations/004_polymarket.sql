-- What real Polymarket markets carry beside SPEC's fields (DESIGN 9), their
-- trades and the recorder's gaps. Existing markets keep every value and get
-- the new fields unknown (null, or '' and no tick changes).

alter table markets
    add column upstream_slug     text not null default '',
    add column taker_fee_rate    double precision,
    add column fee_exponent      integer,
    add column tick_size         double precision,
    -- The tick size changes, oldest first, as two arrays of one length:
    -- tick_change_times[i] is when the tick became tick_change_sizes[i].
    add column tick_change_times timestamptz[] not null default '{}',
    add column tick_change_sizes double precision[] not null default '{}',
    add column min_order_size    double precision,
    add column resolution_source text not null default '',
    add column price_to_beat     double precision,
    add column final_price       double precision,
    add constraint markets_tick_changes_paired
        check (cardinality(tick_change_times) = cardinality(tick_change_sizes));

-- Polymarket trades (last_trade_price events), one row each. The key is the
-- whole trade, so a repeated write stores nothing twice, and it leads with
-- (market, time), so a page newest or oldest first is an index range scan.
-- Text columns compare bytewise (collate "C"), the order the memory store
-- uses for trades at the same instant.
create table market_trades (
    market       bigint not null references markets (id) on delete cascade,
    time         timestamptz not null,
    outcome      text collate "C" not null,
    side         text collate "C" not null,
    price        double precision not null,
    size         double precision not null,
    fee_rate_bps double precision not null,
    tx_hash      text collate "C" not null,
    primary key (market, time, outcome, side, price, size, fee_rate_bps, tx_hash)
);

-- Recording gaps: stretches of a live market with no snapshot for over 3 s.
-- Gaps of a market never overlap or touch (the writer merges them).
create table market_gaps (
    market    bigint not null references markets (id) on delete cascade,
    from_time timestamptz not null,
    to_time   timestamptz not null check (to_time > from_time),
    primary key (market, from_time)
);
