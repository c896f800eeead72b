-- History from archives (DESIGN 9, issue 26): every archive import with its
-- source, files, time range and counts (`updown import list`), and where
-- each market's data came from.
--
-- key identifies an import's inputs: a re-run of the same import finds it
-- and records nothing again.
create table imports (
    id         bigint generated always as identity primary key,
    key        text not null unique,
    source     text not null,
    files      text[] not null,
    from_time  timestamptz,
    to_time    timestamptz,
    markets    bigint not null check (markets >= 0),
    snapshots  bigint not null check (snapshots >= 0),
    trades     bigint not null check (trades >= 0),
    gaps       bigint not null check (gaps >= 0),
    skipped    bigint not null check (skipped >= 0),
    created_at timestamptz not null
);

-- A market's data sources: 'recorder' (the collector), and the archive
-- formats imported into it, e.g. {recorder,pmxt-v2}. Markets stored before
-- were recorded.
alter table markets
    add column data_sources text[] not null default '{recorder}';

-- Archive events name markets by condition id.
create index markets_by_condition on markets (condition_id);
