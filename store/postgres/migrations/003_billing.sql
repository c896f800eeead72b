-- Billing webhook events (SPEC 6), one row per webhook-id: the provider's
-- idempotency key, so a redelivered event is recognised and not applied
-- twice. Rows are kept for support: what arrived, when, and what it did.
create table billing_events (
    id              text primary key,
    type            text not null,
    occurred_at     timestamptz not null, -- the payload's timestamp
    received_at     timestamptz not null,
    outcome         text not null,        -- applied, recorded, stale, unknown_customer, unknown_tier
    subscription_id text not null,
    customer_ref    text not null,        -- data.metadata.updown_customer_id as sent
    email           text not null,        -- data.customer.email as sent
    customer_id     uuid references customers (id) on delete set null,
    set_tier        boolean not null,
    tier            text not null,        -- the tier asked for, as sent (upper-cased)
    previous_tier   text not null,        -- the customer's tier before an applied change
    payload         bytea not null        -- the body exactly as signed
);

create index billing_events_by_received on billing_events (received_at desc, id desc);
create index billing_events_by_customer on billing_events (customer_id, received_at desc, id desc);

-- The newest applied event of a customer, which later events must not
-- predate (the staleness check of RecordBillingEvent).
create index billing_events_applied on billing_events (customer_id, occurred_at desc)
    where outcome = 'applied';
