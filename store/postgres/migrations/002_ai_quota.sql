-- Backtest AI generations used per customer and calendar month (UTC).
create table ai_generations (
    customer_id uuid not null references customers (id) on delete cascade,
    period      date not null,
    used        integer not null default 0 check (used >= 0),
    primary key (customer_id, period)
);
