"""The client against a live `updown dev` (see conftest.py)."""

import csv
import io
import urllib.request
from datetime import datetime, timedelta, timezone

import pytest

import updown
from conftest import ENTERPRISE_KEY, PRO_KEY, STARTER_KEY


@pytest.fixture(scope="module")
def pro(base_url):
    return updown.Client(base_url, PRO_KEY)


@pytest.fixture(scope="module")
def ent(base_url):
    return updown.Client(base_url, ENTERPRISE_KEY)


@pytest.fixture(scope="module")
def resolved(pro):
    """A resolved BTC 15m market with snapshots."""
    for m in pro.markets("BTC", market_type="15m", resolved=True, limit=20).markets:
        if pro.snapshots(m.slug, limit=1).total > 10:
            return m
    pytest.fail("no resolved BTC 15m market with snapshots in dev data")


def test_markets(pro):
    page = pro.markets("BTC", market_type="15m", limit=5)
    assert isinstance(page, updown.MarketPage) and len(page.markets) == 5 and page.total >= 5
    assert all(isinstance(m, updown.Market) and m.coin == "BTC" for m in page.markets)
    starts = [m.start_time for m in page.markets]
    assert starts == sorted(starts, reverse=True)
    assert pro.market(page.markets[0].slug).slug == page.markets[0].slug


def test_cursor_walk_equals_offset_paging(pro, resolved):
    by_cursor = list(pro.iter_snapshots(resolved.slug, order="desc", page_size=37))
    by_offset, off = [], 0
    while True:
        page = pro.snapshots(resolved.slug, limit=37, offset=off)
        by_offset.extend(page.snapshots)
        off += len(page.snapshots)
        if off >= page.total:
            break
    assert [s.time for s in by_cursor] == [s.time for s in by_offset]
    assert len(by_cursor) == page.total
    asc = pro.all_snapshots(resolved.slug, page_size=50)
    assert [s.time for s in asc] == sorted(s.time for s in by_cursor)


def test_time_range(pro, resolved):
    all_ = pro.all_snapshots(resolved.slug)
    lo, hi = all_[5].time, all_[15].time
    got = pro.all_snapshots(resolved.slug, start=lo, end=hi, page_size=4)
    assert [s.time for s in got] == [s.time for s in all_[5:15]]
    page = pro.snapshots(resolved.slug, start=lo, end=hi, limit=3)
    assert page.matched == 10 and page.total == len(all_) and page.next_cursor is not None
    # epoch milliseconds and ISO strings are times too
    ms = int(lo.timestamp() * 1000)
    assert pro.snapshots(resolved.slug, start=ms, end=hi.isoformat(), limit=1).matched == page.matched


def test_snapshots_frame_with_books(pro, resolved):
    pd = pytest.importorskip("pandas")
    df = pro.snapshots_frame(resolved.slug, include_orderbook=True)
    assert len(df) == pro.snapshots(resolved.slug, limit=1).total
    assert str(df["time"].dt.tz) == "UTC" and df["time"].is_monotonic_increasing
    for col in ("price_up", "price_down", "coin_price", "best_bid_up", "best_ask_up", "bids_up", "asks_down"):
        assert col in df.columns, col
    row = df.dropna(subset=["best_bid_up"]).iloc[0]
    assert row["best_bid_up"] == row["bids_up"][0]["price"]
    assert pd.api.types.is_float_dtype(df["price_up"])


def test_chart_of_a_market(pro, resolved):
    # GET /v1/markets/{slug}/series (DESIGN 12): a market downsampled to
    # buckets, each bucket's first, min and max, as a frame.
    pd = pytest.importorskip("pandas")
    c = pro.chart(resolved.slug, points=100)
    total = pro.snapshots(resolved.slug, limit=1).total
    assert c.market.slug == resolved.slug and c.points == 100 and c.snapshots == total and c.bucket_ms > 0
    df = c.to_frame()
    assert 0 < len(df) <= 100 and str(df["time"].dt.tz) == "UTC" and df["time"].is_monotonic_increasing
    assert (df["price_up_min"] <= df["price_up_first"]).all() and (df["price_up_first"] <= df["price_up_max"]).all()
    for col in ("index", "price_down_first", "coin_price_max"):
        assert col in df.columns, col
    assert pd.api.types.is_float_dtype(df["price_up_first"])
    first = pro.snapshots(resolved.slug, order="asc", limit=1).snapshots[0]
    assert df["time"].iloc[0] == pd.Timestamp(first.time).floor("ms") and df["price_up_first"].iloc[0] == first.price_up
    with pytest.raises(updown.ValidationError):
        pro.chart(resolved.slug, points=10)


def test_series_day_of_markets(pro, resolved):
    pd = pytest.importorskip("pandas")
    start = resolved.start_time - timedelta(hours=1)
    snaps = pro.series("BTC", "15m", start, resolved.end_time)
    df = snaps.to_frame()
    slugs = set(df["slug"])
    assert resolved.slug in slugs and len(slugs) >= 2
    markets = pro.all_markets("BTC", market_type="15m", start=start - timedelta(milliseconds=1), end=resolved.end_time)
    assert slugs <= {m.slug for m in markets}
    assert isinstance(markets.to_frame(), pd.DataFrame) and "winner" in markets.to_frame().columns
    # Nothing in the window: empty frames with their columns, so that the
    # README's pivot gives an empty frame rather than a KeyError.
    later = resolved.end_time + timedelta(days=400)
    empty = pro.series("BTC", "15m", later, later + timedelta(hours=1)).to_frame()
    assert len(empty) == 0 and {"time", "slug", "price_up"} <= set(empty.columns)
    assert empty.pivot(index="time", columns="slug", values="price_up").empty
    none = pro.all_markets("BTC", market_type="15m", start=later, end=later + timedelta(hours=1)).to_frame()
    assert len(none) == 0 and "winner" in none.columns


def test_parquet_page(pro, resolved):
    data = pro.snapshots_parquet(resolved.slug, limit=10, include_orderbook=True)
    assert data[:4] == b"PAR1" and data[-4:] == b"PAR1"


def test_parquet_and_csv_pages_say_what_the_json_page_says(pro, resolved):
    # The paging fields of a page read as Parquet or CSV, from its headers,
    # are the JSON page's: a cursor to go on from, total and matched.
    js = pro.snapshots(resolved.slug, limit=10, order="asc", start=resolved.start_time)
    for page in (pro.snapshots_parquet(resolved.slug, limit=10, start=resolved.start_time),
                 pro.snapshots_csv(resolved.slug, limit=10, start=resolved.start_time)):
        assert (page.next_cursor, page.total, page.matched, page.warning) == (js.next_cursor, js.total, js.matched, None)
    assert js.next_cursor and js.matched <= js.total
    tj = pro.market_trades_page(resolved.slug, limit=5, order="asc")
    for page in (pro.market_trades_parquet(resolved.slug, limit=5), pro.market_trades_csv(resolved.slug, limit=5)):
        assert (page.next_cursor, page.total, page.matched) == (tj.next_cursor, tj.total, tj.matched)


def test_iter_snapshots_parquet_walks_every_page(pro, resolved):
    total = pro.snapshots(resolved.slug, limit=1).total
    pages = list(pro.iter_snapshots_parquet(resolved.slug, limit=150))
    assert len(pages) == -(-total // 150) and total > 150
    assert all(p[:4] == b"PAR1" and p[-4:] == b"PAR1" for p in pages)


def test_parquet_or_snapshots_frame(pro, resolved):
    """What the README says: pandas reads the Parquet only with pyarrow (or
    fastparquet), which Debian's python3-pandas lacks; snapshots_frame()
    needs pandas alone and gives the same snapshots."""
    pd = pytest.importorskip("pandas")
    data = pro.snapshots_parquet(resolved.slug, limit=10, order="asc")
    first10 = pro.snapshots(resolved.slug, limit=10, order="asc").snapshots
    frame = pro.snapshots_frame(resolved.slug, start=first10[0].time, end=first10[-1].time + timedelta(microseconds=1))
    assert list(frame["time"]) == [pd.Timestamp(s.time) for s in first10]
    assert list(frame["price_up"]) == [s.price_up for s in first10]
    try:
        pq = pd.read_parquet(io.BytesIO(data))
    except ImportError as e:  # no pyarrow or fastparquet: the README's case
        assert "pyarrow" in str(e)
        return
    assert list(pq["time"]) == list(frame["time"]) and list(pq["price_up"]) == list(frame["price_up"])


def test_exchange(ent):
    page = ent.depth("spot", limit=5)
    assert len(page.data) == 5 and page.total >= 5 and page.next_cursor
    walked = []
    for d in ent.iter_depth("future", order="asc", page_size=200):
        walked.append(d)
        if len(walked) == 450:
            break
    times = [d.time for d in walked]
    assert times == sorted(times) and len(set(times)) == len(times)
    latest = ent.latest_depth("eth", "future")
    assert latest.coin_price > 0
    # When the collector took it (Last-Modified): a stale depth says so.
    assert latest.time is not None and abs((datetime.now(timezone.utc) - latest.time).total_seconds()) < 600
    trades = ent.trades("btc", "spot", limit=3)
    assert len(trades) == 3 and all(isinstance(t, updown.Trade) for t in trades)
    assert ent.latest_trade("sol", "future").is_best_match is None
    # "futures", as the data is usually called, is the API's "future".
    assert ent.latest_depth("btc", "Futures").coin_price > 0
    assert len(ent.depth("futures", limit=2).data) == 2
    with pytest.raises(ValueError, match="spot or future"):
        ent.trades("btc", "perp")


def test_iter_market_trades(pro, resolved):
    # The whole market by cursor, in small pages, equals it by offset.
    by_offset = updown.MarketTradeList()
    while True:
        page = pro.market_trades(resolved.slug, order="asc", limit=1000, offset=len(by_offset))
        by_offset.extend(page)
        if len(page) < 1000:
            break
    assert len(by_offset) > 10, "the dev market has trades"
    key = lambda t: (t.time, t.outcome, t.side, t.price, t.size, t.fee_rate_bps)  # noqa: E731
    walked = list(pro.iter_market_trades(resolved.slug, page_size=7))
    assert [key(t) for t in walked] == [key(t) for t in by_offset]
    newest_first = list(pro.iter_market_trades(market_id=resolved.market_id, order="desc", page_size=9))
    assert [key(t) for t in newest_first] == [key(t) for t in reversed(by_offset)]
    # A time range: start inclusive, end exclusive, counted as matched.
    start, end = by_offset[3].time, by_offset[-3].time
    ranged = list(pro.iter_market_trades(resolved.slug, start=start, end=end, page_size=5))
    assert [key(t) for t in ranged] == [key(t) for t in by_offset if start <= t.time < end]
    page = pro.market_trades_page(resolved.slug, start=start, end=end, limit=2)
    assert page.matched == len(ranged) and page.total == len(by_offset) and page.next_cursor
    with pytest.raises(updown.ValidationError):
        pro.market_trades_page(resolved.slug, start=start, end=end, limit=2, cursor=page.next_cursor, offset=1)
    with pytest.raises(updown.ValidationError):
        pro.market_trades_page(resolved.slug, start=end, end=start)


def test_market_trades(pro, resolved):
    trades = pro.all_market_trades(resolved.slug, page_size=50)
    assert all(isinstance(t, updown.MarketTrade) for t in trades)
    assert [t.time for t in trades] == sorted(t.time for t in trades)
    newest = pro.market_trades(resolved.slug, limit=1)
    # By the external market id too, as every other market data method.
    assert pro.market_trades(market_id=resolved.market_id, limit=1) == newest
    if trades:
        assert newest[0].time == trades[-1].time
        assert all(t.tx_hash.startswith("0x") for t in trades), "JSON trades carry tx_hash as CSV does"
        pytest.importorskip("pandas")
        assert {"time", "outcome", "price", "size", "side", "tx_hash"} <= set(trades.to_frame().columns)


def test_replay(pro, resolved):
    cond = [{"field": "price_up", "operator": ">", "value": 0}]
    r = pro.replay(resolved.slug, "UP", cond, [{"field": "time_remaining_pct", "operator": "<", "value": 50}], 10)
    assert isinstance(r, updown.ReplayResult) and r.total_snapshots > 0 and r.trades
    pytest.importorskip("pandas")
    assert list(r.trades_frame()["type"])[0] == "ENTRY"
    assert "pnl" in r.equity_frame().columns


def test_replay_pages_of_trades(pro, resolved):
    """trades_offset and trades_limit ask for a page of the trade events;
    the pages fit together into the events of the whole replay."""
    every = [{"field": "price_up", "operator": ">=", "value": 0}]
    full = pro.replay(resolved.slug, "UP", every, every, 10)
    assert len(full.trades) > 25 and not full.trades_truncated
    pages = [pro.replay(resolved.slug, "UP", every, every, 10, trades_offset=off, trades_limit=10) for off in (0, 10, 20)]
    assert all(p.trades_truncated for p in pages)
    assert [t for p in pages for t in p.trades] == full.trades[:30]
    assert pro.replay(resolved.slug, "UP", every, every, 10, all_trades=True).trades == full.trades


def test_market_fee_and_reference_fields(pro, resolved):
    """Market carries DESIGN 9's fields: the fee schedule, the tick size,
    Polymarket's reference prices and the data's sources."""
    m = pro.market(resolved.slug)
    assert m.tick_size == m.raw["tick_size"] and m.taker_fee_rate == m.raw["taker_fee_rate"]
    assert m.maker_rebate_rate == m.raw["maker_rebate_rate"] and m.fee_exponent == m.raw["fee_exponent"]
    assert m.fee_type == m.raw["fee_type"] == "crypto_fees_v2"
    assert m.price_to_beat == m.raw["price_to_beat"] and m.final_price == m.raw["final_price"]
    assert m.data_sources == m.raw["data_sources"] and m.resolution_source == m.raw["resolution_source"]
    pytest.importorskip("pandas")
    df = pro.markets("BTC", market_type="15m", limit=3).to_frame()
    assert {"tick_size", "taker_fee_rate", "price_to_beat", "data_sources"} <= set(df.columns)
    assert str(df["tick_size"].dtype) == "float64"


def test_replay_costs_and_resting_orders(pro, resolved):
    """replay() passes every optional field: costs, re-entry control and a
    resting GTC order, whose orders the result lists."""
    entry = [{"field": "time_remaining_pct", "operator": ">", "value": 50}]
    exit_ = [{"field": "time_remaining_pct", "operator": "<", "value": 20}]
    r = pro.replay(resolved.slug, "UP", entry, exit_, 10, order_type="GTC", limit_offset_ticks=1, post_only=True,
                   cancel_after_ms=60_000, queue_model="FRONT", include_rebates=True, fee_model="MARKET",
                   latency_ms=250, reentry_cooldown_ms=30_000, max_entries_per_market=2)
    s = r.strategy
    assert (s["orderType"], s["queueModel"], s["limitOffsetTicks"], s["cancelAfterMs"]) == ("GTC", "FRONT", 1, 60000)
    assert (s["feeModel"], s["latencyMs"], s["reentryCooldownMs"], s["maxEntriesPerMarket"]) == ("MARKET", 250, 30000, 2)
    assert s["postOnly"] is True and s["includeRebates"] is True
    assert r.orders and r.orders[0]["action"] == "PLACED"
    assert r.performance["orders_placed"] == sum(1 for o in r.orders if o["action"] == "PLACED")
    assert "total_maker_rebates" in r.performance and "total_fees" in r.performance
    with pytest.raises(updown.ValidationError) as e:
        pro.replay(resolved.slug, "UP", entry, exit_, 10, post_only=True)
    assert e.value.code == "VALIDATION_ERROR"


def test_sweep(pro):
    """sweep() waits for a sweep, reports progress, and trials_frame() has
    a row a trial with its parameters and objectives."""
    seen = []
    s = pro.sweep({"side": "UP", "positionSize": 10,
                   "entryConditions": [{"field": "price_up", "operator": "<", "value": 0.4}],
                   "exitConditions": [{"field": "price_up", "operator": ">=", "value": 0.6}]},
                  [{"path": "/entryConditions/0/value", "values": [0.3, 0.4]},
                   {"path": "/exitConditions/0/value", "values": [0.6, 0.7]}],
                  {"coin": "BTC", "market_type": "15m", "count": 20}, split={"kind": "HOLDOUT"},
                  progress=seen.append, poll=0.2, timeout=120)
    assert isinstance(s, updown.Sweep) and s.status == "DONE" and seen and seen[-1].status == "DONE"
    assert s.trials == 4 and s.progress["replays_done"] == 80 and s.best is not None
    pytest.importorskip("pandas")
    df = s.trials_frame()
    assert len(df) == 4 and "/entryConditions/0/value" in df.columns and "train.total_pnl" in df.columns
    # The trials' CSV has the frame's columns (GET /v1/sweeps/{id}/trials says so).
    req = urllib.request.Request(f"{pro.base_url}/v1/sweeps/{s.sweep_id}/trials",
                                 headers={"X-API-Key": pro.api_key, "Accept": "text/csv"})
    with urllib.request.urlopen(req) as res:
        header = next(csv.reader(io.StringIO(res.read().decode())))
    assert list(df.columns) == header
    with pytest.raises(updown.ValidationError):
        pro.sweep({"side": "UP"}, [], {"coin": "BTC", "market_type": "15m", "count": 5})
    listed = pro.sweeps(limit=100)
    assert s.sweep_id in {x.sweep_id for x in listed} and all(isinstance(x, updown.Sweep) for x in listed)


def test_gaps(pro, resolved):
    gaps = pro.gaps(resolved.slug)
    assert isinstance(gaps, list)
    for g in gaps:
        assert g["from"].tzinfo is not None and g["to"] >= g["from"] and g["kind"] in ("snapshots", "trades")
    with pytest.raises(updown.NotFoundError):
        pro.gaps("no-such-market")


def test_account_and_agent(pro):
    acct = pro.account()
    assert isinstance(acct, updown.Account) and acct.tier == "PRO"
    # Its times are UTC datetimes, as the quota's: the next day and month.
    assert acct.usage["resets_at"].tzinfo is not None and acct.usage["resets_at"].hour == 0
    assert acct.ai_quota["resets_at"] == pro.agent.quota().resets_at
    # Every agent method answers a dataclass, as the rest of the client does.
    q = pro.agent.quota()
    assert isinstance(q, updown.Quota) and q.limit == 5 and q.remaining == q.limit - q.used
    assert q.resets_at is not None and q.resets_at.tzinfo is not None and q.resets_at.day == 1
    gen = pro.agent.generate("buy UP when price_up drops below 0.35, exit above 0.6", coin="BTC", marketType="15m")
    assert isinstance(gen, updown.Generation) and gen.generated_strategy["side"] == "UP"
    assert "price_up < 0.35" in gen.strategy_code and gen.generated_strategy["entryConditions"]
    assert isinstance(gen.quota, updown.Quota) and gen.quota.used == q.used + 1
    assert pro.agent.quota().used == gen.quota.used
    bt = pro.agent.run(generated_strategy=gen.generated_strategy, marketCount=3)
    assert isinstance(bt, updown.Backtest) and len(bt.results) == 3 and bt.warning is None
    assert bt.aggregate["markets_tested"] == 3 and bt.strategy_code == gen.strategy_code
    assert isinstance(bt.quota, updown.Quota) and bt.quota.used == gen.quota.used  # /run uses none
    # More markets than dev holds: the answer says how many it tested.
    many = pro.agent.run(strategy_code=gen.strategy_code, marketCount=100)
    assert (many.warning is not None) == (len(many.results) < 100)
    if many.warning:
        assert "100" in many.warning and str(len(many.results)) in many.warning
    pytest.importorskip("pandas")
    df = bt.to_frame()
    assert list(df["slug"]) == [r["slug"] for r in bt.results] and "total_pnl" in df.columns


def test_errors(base_url, pro, resolved):
    with pytest.raises(updown.NotFoundError) as e:
        pro.market("btc-updown-15m-1")
    assert e.value.code == "RESOURCE_NOT_FOUND" and e.value.status == 404 and e.value.request_id
    with pytest.raises(updown.AuthenticationError):
        updown.Client(base_url, "ud_nope").market(resolved.slug)
    with pytest.raises(updown.PermissionDeniedError) as e:
        updown.Client(base_url, STARTER_KEY).depth("spot")
    assert e.value.code == "TIER_ACCESS_DENIED"
    page = pro.snapshots(resolved.slug, limit=2, order="asc")
    with pytest.raises(updown.ValidationError) as e:
        pro.snapshots(resolved.slug, limit=2, cursor=page.next_cursor)  # the cursor of another order
    assert e.value.code == "VALIDATION_ERROR" and e.value.details["errors"][0]["location"] == "query.cursor"
    with pytest.raises(updown.NotFoundError):
        pro.job("no-such-job")


def test_all_markets_limit_and_offset(pro):
    newest = pro.markets("BTC", market_type="15m", limit=7).markets
    assert [m.slug for m in pro.all_markets("BTC", market_type="15m", limit=5)] == [m.slug for m in newest[:5]]
    assert [m.slug for m in pro.iter_markets("BTC", market_type="15m", limit=3, offset=4)] == [m.slug for m in newest[4:7]]


def test_sweep_over_a_time_range_of_datetimes(pro, resolved):
    # markets.start_time and end_time as datetimes, as every other method
    # of the client takes times (the sweep's start_time is inclusive).
    ms = pro.all_markets("BTC", market_type="15m", resolved=True, end=resolved.end_time, limit=6)
    start = min(m.start_time for m in ms)
    s = pro.sweep({"side": "UP", "positionSize": 10,
                   "entryConditions": [{"field": "price_up", "operator": "<", "value": 0.5}],
                   "exitConditions": [{"field": "price_up", "operator": ">=", "value": 0.6}]},
                  [{"path": "/entryConditions/0/value", "values": [0.4, 0.5]}],
                  {"coin": "BTC", "market_type": "15m", "count": 100, "start_time": start,
                   "end_time": resolved.end_time.replace(tzinfo=None)}, poll=0.2, timeout=120)
    assert s.status == "DONE" and s.markets == len(ms)
    assert s.created_at.tzinfo is not None and s.finished_at >= s.created_at
    assert s.raw["request"]["markets"]["start_time"].startswith(start.strftime("%Y-%m-%dT%H:%M:%S"))


def test_trades_and_depth_parquet_pages(pro, ent, resolved):
    total = pro.market_trades_page(resolved.slug, limit=1).total
    pages = list(pro.iter_market_trades_parquet(resolved.slug, limit=50))
    assert total > 50 and len(pages) == -(-total // 50)
    assert all(p[:4] == b"PAR1" and p[-4:] == b"PAR1" for p in pages)
    assert pro.market_trades_parquet(market_id=resolved.market_id, limit=5)[:4] == b"PAR1"
    first = ent.depth("spot", order="asc", limit=450).data
    pages = list(ent.iter_depth_parquet("spot", start=first[0].time, end=first[-1].time, limit=200))
    assert len(pages) == 3 and all(p[:4] == b"PAR1" and p[-4:] == b"PAR1" for p in pages)
    assert ent.depth_parquet("futures", limit=3)[:4] == b"PAR1"


def test_sweep_trials_pages(pro):
    # GET /v1/sweeps/{id}/trials, the one sweep endpoint without a method.
    s = pro.sweep({"side": "UP", "positionSize": 10,
                   "entryConditions": [{"field": "price_up", "operator": "<", "value": 0.4}],
                   "exitConditions": [{"field": "price_up", "operator": ">=", "value": 0.6}]},
                  [{"path": "/entryConditions/0/value", "values": [0.3, 0.35, 0.4]}],
                  {"coin": "BTC", "market_type": "15m", "count": 4}, poll=0.2, timeout=120)
    page = pro.sweep_trials(s.sweep_id, limit=2, offset=1)
    assert [t["trial"] for t in page] == [1, 2] and page == s.results["trials"][1:3]
    assert (page.total, page.limit, page.offset) == (3, 2, 1)
    data = pro.sweep_trials_parquet(s.sweep_id, limit=2)
    assert data[:4] == b"PAR1" and data[-4:] == b"PAR1"
    assert data.total == pro.sweep_trials_csv(s.sweep_id, limit=2).total == 3 and data.next_cursor is None
    with pytest.raises(updown.NotFoundError):
        pro.sweep_trials("no-such-sweep")


def test_empty_frames_with_books_have_the_book_columns(pro, resolved):
    # Every row read with include_orderbook has the book columns; a range
    # with no snapshot gave a frame without them (df["best_bid_up"]:
    # KeyError), where an empty frame otherwise has its columns.
    full = pro.snapshots_frame(resolved.slug, include_orderbook=True, page_size=100)
    after = resolved.end_time + timedelta(hours=1)
    empty = pro.snapshots_frame(resolved.slug, include_orderbook=True, start=after, end=after + timedelta(hours=1))
    assert len(full) > 0 and len(empty) == 0
    assert set(full.columns) <= set(empty.columns) | {"slug"} and "best_bid_up" in empty.columns
    later = resolved.end_time + timedelta(days=400)
    none = pro.series("BTC", "15m", later, later + timedelta(hours=1), include_orderbook=True).to_frame()
    assert len(none) == 0 and {"slug", "best_ask_down", "asks_down"} <= set(none.columns)


def test_the_packages_docstring_example_runs(base_url):
    # help(updown) shows an example; it read a fixed market of April 2026,
    # which no server past May 2026 serves to a PRO key (outside its 31
    # days: 403) and `updown dev`, whose data ends at the present, lacks.
    pd = pytest.importorskip("pandas")
    lines = [ln[4:] for ln in updown.__doc__.splitlines() if ln.startswith("    ")]
    assert lines, "the docstring has an indented example"
    code = "\n".join(lines).replace('"http://localhost:8080"', repr(base_url))
    scope = {}
    exec(compile(code, "updown.__doc__", "exec"), scope)
    assert isinstance(scope["df"], pd.DataFrame) and len(scope["df"]) > 0


def test_a_sweeps_request_runs_it_again(pro, resolved):
    # A sweep answers its request (the body as it runs, normalized); the
    # client kept it in raw only. Sweep.request has sweep()'s keyword names,
    # its market times as UTC datetimes, so sweep(**s.request) runs it again.
    ms = pro.all_markets("BTC", market_type="15m", resolved=True, end=resolved.end_time, limit=4)
    start = min(m.start_time for m in ms)
    s = pro.sweep({"side": "UP", "positionSize": 10,
                   "entryConditions": [{"field": "price_up", "operator": "<", "value": 0.5}],
                   "exitConditions": [{"field": "price_up", "operator": ">=", "value": 0.6}]},
                  [{"path": "/entryConditions/0/value", "values": [0.4, 0.5]}],
                  {"coin": "BTC", "market_type": "15m", "count": 4, "start_time": start, "end_time": resolved.end_time},
                  objective="sqn", poll=0.2, timeout=120)
    r = s.request
    assert set(r) >= {"strategy", "parameters", "markets", "search", "split", "objective"}
    assert r["objective"] == "sqn" and r["strategy"]["maxLossPercent"] == 50  # normalized: defaults filled in
    assert r["parameters"] == [{"path": "/entryConditions/0/value", "values": [0.4, 0.5]}]
    assert r["markets"]["start_time"] == start and r["markets"]["start_time"].tzinfo is not None
    assert s.raw["request"]["markets"]["start_time"].startswith(start.strftime("%Y-%m-%dT%H:%M:%S"))
    assert pro.get_sweep(s.sweep_id).request == r
    again = pro.sweep(**r, poll=0.2, timeout=120)
    assert again.sweep_id != s.sweep_id and again.request == r and again.markets == s.markets
    assert again.trials_frame()["train.total_pnl"].tolist() == s.trials_frame()["train.total_pnl"].tolist()
    listed = {x.sweep_id: x for x in pro.sweeps(limit=100)}
    assert listed[s.sweep_id].request is None  # the list answers no request


def test_csv_pages(pro, ent, resolved):
    # Every list the API answers as CSV, read with the client: the pages of
    # a walk hold every row once, as the JSON walk has them.
    pd = pytest.importorskip("pandas")
    total = pro.snapshots(resolved.slug, limit=1).total
    pages = list(pro.iter_snapshots_csv(resolved.slug, limit=150))
    assert len(pages) == -(-total // 150) and all(isinstance(p, str) for p in pages)
    df = pd.concat([pd.read_csv(io.StringIO(p)) for p in pages], ignore_index=True)
    assert list(df.columns[:5]) == ["slug", "time", "coin_price", "price_up", "price_down"]
    js = pro.snapshots_frame(resolved.slug)
    assert len(df) == total and (pd.to_datetime(df["time"], utc=True) == js["time"]).all()
    assert df["price_up"].tolist() == js["price_up"].tolist()
    one = pro.snapshots_csv(market_id=resolved.market_id, limit=3, order="desc", include_orderbook=True)
    rows = list(csv.reader(io.StringIO(one)))
    assert len(rows) == 4 and rows[1][1] == js["time"].iloc[-1].strftime("%Y-%m-%dT%H:%M:%S.%fZ") and "|" in rows[1][5]

    trades = pro.all_market_trades(resolved.slug)
    pages = list(pro.iter_market_trades_csv(resolved.slug, limit=100))
    assert len(pages) == -(-len(trades) // 100)
    tdf = pd.concat([pd.read_csv(io.StringIO(p)) for p in pages], ignore_index=True)
    assert tdf["tx_hash"].tolist() == [t.tx_hash for t in trades]
    assert len(list(csv.reader(io.StringIO(pro.market_trades_csv(resolved.slug, limit=5))))) == 6

    first = ent.depth("spot", order="asc", limit=450).data
    pages = list(ent.iter_depth_csv("spot", start=first[0].time, end=first[-1].time, limit=200))
    ddf = pd.concat([pd.read_csv(io.StringIO(p)) for p in pages], ignore_index=True)
    assert len(pages) == 3 and ddf["time_epoch_ms"].tolist() == [int(d.time.timestamp() * 1000) for d in first]
    assert len(list(csv.reader(io.StringIO(ent.depth_csv("futures", limit=3))))) == 4
    with pytest.raises(updown.PermissionDeniedError) as e:
        updown.Client(pro.base_url, STARTER_KEY).depth_csv("spot")
    assert e.value.code == "TIER_ACCESS_DENIED" and e.value.status == 403
    with pytest.raises(updown.NotFoundError) as e:
        pro.snapshots_csv("no-such-market")
    assert e.value.code == "RESOURCE_NOT_FOUND"


def test_sweep_trials_csv(pro):
    pd = pytest.importorskip("pandas")
    s = pro.sweep({"side": "UP", "positionSize": 10,
                   "entryConditions": [{"field": "price_up", "operator": "<", "value": 0.4}],
                   "exitConditions": [{"field": "price_up", "operator": ">=", "value": 0.6}]},
                  [{"path": "/entryConditions/0/value", "values": [0.3, 0.35, 0.4]}],
                  {"coin": "BTC", "market_type": "15m", "count": 4}, poll=0.2, timeout=120)
    frame = s.trials_frame()
    got = pd.read_csv(io.StringIO(pro.sweep_trials_csv(s.sweep_id, limit=2, offset=1)))
    assert list(got.columns) == list(frame.columns) and got["trial"].tolist() == [1, 2]
    assert got["/entryConditions/0/value"].tolist() == frame["/entryConditions/0/value"].tolist()[1:3]
    with pytest.raises(updown.NotFoundError):
        pro.sweep_trials_csv("no-such-sweep")


def test_a_starters_newest_markets_are_not_cut(base_url):
    # A Starter sees the newest 50 BTC 5m markets: the newest 10 are all
    # there, so asking for them warns nothing; the whole walk is cut, and
    # says so.
    import warnings
    st = updown.Client(base_url, STARTER_KEY)
    with warnings.catch_warnings():
        warnings.simplefilter("error", updown.DataWindowWarning)
        assert len(st.all_markets("BTC", market_type="5m", limit=10)) == 10
    with pytest.warns(updown.DataWindowWarning, match="STARTER"):
        assert len(st.all_markets("BTC", market_type="5m")) == 50


def test_iter_sweeps_lists_every_sweep(ent):
    strategy = {"side": "UP", "positionSize": 10,
                "entryConditions": [{"field": "price_up", "operator": "<", "value": 0.4}],
                "exitConditions": [{"field": "price_up", "operator": ">=", "value": 0.6}]}
    started = [ent.sweep(strategy, [{"path": "/positionSize", "values": [5, 10]}],
                         {"coin": "BTC", "market_type": "15m", "count": 2}, wait=False).sweep_id for _ in range(3)]
    listed = [s.sweep_id for s in ent.iter_sweeps(page_size=2)]
    assert len(listed) == len(set(listed)) >= 3 and set(listed[:3]) == set(started)  # the newest
    assert len(listed) == ent._get("/v1/sweeps", {"limit": 1})["data"]["total"]
    for sid in started:
        ent.wait_sweep(sid, poll=0.2, timeout=120)
