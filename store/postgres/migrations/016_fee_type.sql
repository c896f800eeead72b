-- The fee type of a market's schedule (DESIGN 9): Gamma's feeType as
-- Polymarket names its fee curves ("crypto_fees", the early-2026 crypto
-- curve with its extra factor p; "crypto_fees_v2"). A replay charges the
-- curve the type names. '' where unknown, as upstream_slug; markets stored
-- before keep ''.

alter table markets
    add column fee_type text not null default '';
