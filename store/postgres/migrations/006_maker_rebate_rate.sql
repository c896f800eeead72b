-- The maker rebate of a market's fee schedule (DESIGN 9, issue 23):
-- Gamma's feeSchedule.rebateRate, the share of the taker fee a maker's
-- filled volume would have paid that Polymarket pays back to makers. Null
-- where the schedule has none; markets stored before keep null (unknown).

alter table markets
    add column maker_rebate_rate double precision;
