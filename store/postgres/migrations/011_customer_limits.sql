-- The rest of the ENTERPRISE plan's custom limits (DESIGN 4 and 14,
-- `updown customers set-limits`): the monthly Backtest AI generation quota
-- and the sizes of one sweep. 0 keeps the plan's default, as the rate
-- limits of 005 do.
alter table customers
    add column ai_generations_per_month integer not null default 0 check (ai_generations_per_month >= 0),
    add column sweep_trials             integer not null default 0 check (sweep_trials >= 0),
    add column sweep_markets            integer not null default 0 check (sweep_markets >= 0),
    add column sweep_replays            integer not null default 0 check (sweep_replays >= 0);
