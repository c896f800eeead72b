-- When a customer's tier was last set by hand (`updown customers set-tier`,
-- store.SetCustomerTier), and to what: RecordBillingEvent places it among
-- the customer's billing events (store.WithTierSetByHand), so that an event
-- of a subscription the customer had before (a cancellation, a late
-- activation) does not take the tier set by hand away. Null: never.
alter table customers
    add column tier_by_hand    text,
    add column tier_by_hand_at timestamptz;
