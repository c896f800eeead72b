-- A DONE sweep's result is written out a few trials at a time
-- (WriteSweepResult), with no connection held while the client reads: a
-- retention prune (DeleteSweepsFinishedBefore) in between would cut the
-- answer, its status and start sent already. readers counts the writings
-- under way, each taking one on its start and giving it back at its end:
-- the prune spares a sweep with one, and deletes it at a later prune.
-- read_until bounds a count a writing never gave back (its process died):
-- each writing pushes it out as it goes, and past it the count is void.
alter table sweeps add column read_until timestamptz,
    add column readers int not null default 0;
