-- Whether a billing event ends its subscription (subscription.cancelled):
-- RecordBillingEvent takes a customer's events in the order they happened
-- (store.BillingOutcomeOf), and a cancellation of a replaced subscription
-- changes nothing there, so each event's kind is kept. Events recorded
-- before are cancellations by their type, as the api reads it.
alter table billing_events add column ends_subscription boolean not null default false;
update billing_events set ends_subscription = true
    where set_tier and lower(btrim(type)) = 'subscription.cancelled';
