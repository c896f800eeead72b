-- A customer's keys are listed a page at a time, unrevoked first, then
-- revoked, each newest first (issue 28, item 5): the page reads this index
-- in its order and stops at the page's end, however many keys were
-- revoked before.
create index api_keys_live_first on api_keys (customer_id, (revoked_at is not null), created_at desc, id desc);
