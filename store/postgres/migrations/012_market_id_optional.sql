-- A market without an upstream id (market_id '', as an import of a file
-- with only the required columns writes it) is not indexed by it: several
-- may be stored, as the memory store has it, and none is found by the
-- empty id. The ids markets have stay unique.
alter table markets drop constraint markets_market_id_key;
create unique index markets_market_id_key on markets (market_id) where market_id <> '';
