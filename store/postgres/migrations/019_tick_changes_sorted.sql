-- A market's tick changes oldest first, one at an instant (the first listed
-- of those at one), as every write keeps them since the stores sort them
-- (store.SortTickChanges): a row an import wrote before kept its list in
-- the order the import gave it, and reads sorted it. Reads now take the
-- arrays as stored. updated_at stays: the market's changes are the same,
-- only put in their order.
update markets m
set tick_change_times = s.times, tick_change_sizes = s.sizes
from (
    select id, array_agg(t order by t) as times, array_agg(z order by t) as sizes
    from (
        select distinct on (mk.id, c.t) mk.id, c.t, c.z
        from markets mk,
            unnest(mk.tick_change_times, mk.tick_change_sizes) with ordinality as c (t, z, o)
        where cardinality(mk.tick_change_times) > 1
        order by mk.id, c.t, c.o
    ) first_at_each_instant
    group by id
) s
where m.id = s.id and m.tick_change_times <> s.times;
