-- A DONE sweep's result is written out a few trials at a time
-- (WriteSweepResult), with no connection held while the client reads: a
-- retention prune (DeleteSweepsFinishedBefore) in between would cut the
-- answer, its status and start sent already. read_until is the lease a
-- writing takes on its sweep, renewed as it goes: the prune spares a sweep
-- whose lease has not lapsed, and deletes it at a later prune.
alter table sweeps add column read_until timestamptz;
