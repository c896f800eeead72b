-- The tier an applied billing event set (store.BillingEvent.NewTier): the
-- tier it asked for, except for a cancellation that left the customer on
-- another live subscription's tier. A redelivery answers the first
-- delivery's record, which must say what it set. Events recorded before
-- this column have it empty: the tier they set is not known here.
alter table billing_events add column new_tier text not null default '';
