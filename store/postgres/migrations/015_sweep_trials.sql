-- A DONE sweep's trials, a row each, cut out of its result (a hundred
-- megabytes for an ENTERPRISE sweep of ten thousand trials), so that a page
-- of them reads that page's rows and the whole result is written out a few
-- trials at a time (store.SweepStore.SweepTrials, WriteSweepResult), never
-- read whole into the api.
--
-- sweeps.result then holds the rest of the result, its trials array empty
-- ([]), and trials_at says where in it the trials go: just after the
-- array's [. The rows' bodies are the array's elements as they stood, the
-- white space around each included, so that the rest and the bodies joined
-- by commas are the result FinishSweep was given, byte for byte.
-- trial_rows is how many rows the sweep has; null for a sweep finished
-- before this migration, whose result is still whole in sweeps.result (it
-- goes with retention, 30 days after it finished), and for one not DONE.
-- A result without trials to cut out (no trials array, or an empty one)
-- stays whole: trials_at null, trial_rows 0.
alter table sweeps
    add column trials_at  integer check (trials_at >= 0),
    add column trial_rows integer check (trial_rows >= 0),
    add check (trial_rows is null or status = 'DONE'),
    add check ((trials_at is null) or (trial_rows > 0));

-- Read by sweep and trial, a page a range of the key; written once, when the
-- sweep finishes, in the transaction that makes it DONE.
create table sweep_trials (
    sweep_id text not null references sweeps (id) on delete cascade,
    trial    integer not null check (trial >= 0), -- the element's index in the array
    body     bytea not null,
    primary key (sweep_id, trial)
);

-- lz4 where the server has it, as for the shards (007).
do $$
begin
    execute 'alter table sweep_trials alter column body set compression lz4';
exception when feature_not_supported or syntax_error then
    raise notice 'lz4 unavailable, sweep trials use the default TOAST compression';
end
$$;
