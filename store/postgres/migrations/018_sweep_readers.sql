-- readers counts the writings of a DONE sweep's result under way
-- (WriteSweepResult), each taking one on its start and giving it back at
-- its end: a retention prune spares a sweep with one, and deletes it at a
-- later prune. A second writing that ended while a first still wrote gave
-- the lease of 017 back for both. read_until still bounds a count a
-- writing never gave back (its process died): each writing pushes it out
-- as it goes, and past it the count is void. (`if not exists`: a build of
-- the same day added the column in 017.)
alter table sweeps add column if not exists readers int not null default 0;
