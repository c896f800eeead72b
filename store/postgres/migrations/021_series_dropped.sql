-- How many snapshots of a market a drop of old months took
-- (DropSnapshotsBefore). With n it versions the market's snapshots
-- (store.DataVersion): n alone grows with every append and falls with a
-- drop, so a drop and as many snapshots appended after it would leave it
-- as it was; n and dropped together never come back. A market a drop
-- empties keeps its row, n 0 and no span, to keep the count.
alter table snapshot_series add column dropped bigint not null default 0;
