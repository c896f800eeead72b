-- Emails match case-insensitively (issue 16): they are kept trimmed and
-- lower-cased, the form the stores compare. Rows written before that are
-- brought to it here; two customers whose emails differ only in case
-- cannot both keep theirs, and the migration stops and names them rather
-- than pick one.
do $$
declare
    dup text;
begin
    select string_agg(e, ', ') into dup from (
        select lower(btrim(email)) as e from customers group by 1 having count(*) > 1
    ) d;
    if dup is not null then
        raise exception 'customers share an email that differs only in case or spaces (%): change or merge them by hand, then migrate again', dup;
    end if;
end
$$;

update customers set email = lower(btrim(email)) where email <> lower(btrim(email));

-- A customer's own request allowances (the ENTERPRISE plan's "custom"
-- limits, `updown customers set-limits`); 0 keeps the plan's default.
alter table customers
    add column rate_per_minute integer not null default 0 check (rate_per_minute >= 0),
    add column rate_per_day    integer not null default 0 check (rate_per_day >= 0);
