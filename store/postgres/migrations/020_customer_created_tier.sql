-- The tier a customer was created on (`updown customers create --tier`):
-- RecordBillingEvent begins the walk of the customer's billing events on it
-- (store.WithTierAtCreation), so that an event matched by email alone does
-- not lower it. Null: not known (a customer created before this column
-- whose tier events or a setting by hand have changed since), taken as
-- STARTER, below which nothing lowers a tier: as before. A customer no
-- tier-setting event was recorded for and whose tier was never set by
-- hand is on the tier it was created on.
alter table customers add column created_tier text;
update customers c set created_tier = c.tier
where c.tier_by_hand is null
    and not exists (
        select 1 from billing_events e
        where e.customer_id = c.id and e.set_tier and e.outcome in ('applied', 'stale', 'superseded')
    );
