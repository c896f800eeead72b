-- Gaps have a kind (issue 28): 'snapshots', a stretch of a live market
-- without a snapshot (every gap recorded so far), or 'trades', a stretch
-- in which snapshots went on (from REST) but the trade feed was down, so
-- trades may be missing. Gaps of one kind never overlap or touch; gaps of
-- different kinds may.
alter table market_gaps
    add column kind text not null default 'snapshots' check (kind in ('snapshots', 'trades'));
alter table market_gaps drop constraint market_gaps_pkey;
alter table market_gaps add primary key (market, kind, from_time);
