"""DataFrame dtypes do not depend on the data: a price or size the API
writes as a whole number (JSON 15, not 15.0), or a column that is null on
every row, is still float64, so frames of different pages concatenate and
compute alike; an empty replay's frames have their columns."""

import pytest

import updown
from updown.models import MarketList, MarketTradeList, SnapshotList, TradeList

pd = pytest.importorskip("pandas")

MARKET = {"slug": "btc-updown-15m-1", "market_id": "1", "event_id": "e", "market_type": "15m",
          "start_time": "2026-04-29T13:00:00Z", "end_time": "2026-04-29T13:15:00Z", "coin_price_start": 77000,
          "coin_price_end": None, "condition_id": "", "clob_token_up": "", "clob_token_down": "", "winner": None,
          "final_volume": None, "final_liquidity": None, "resolved_at": None,
          "created_at": "2026-04-29T13:00:00.123456Z", "updated_at": "2026-04-29T13:00:00.123Z"}


def floats(df, *cols):
    return {c: str(df[c].dtype) for c in cols if str(df[c].dtype) != "float64"}


def test_exchange_trades_of_whole_quantities_are_float():
    # SOL futures trade in whole contracts: every qty on a page can be an integer
    t = TradeList([updown.Trade.from_json({"id": 1, "price": 196, "qty": 15, "quoteQty": 2940, "time": 1795934737146,
                                           "isBuyerMaker": False})])
    assert floats(t.to_frame(), "price", "qty", "quote_qty") == {}


def test_market_trades_and_snapshots_of_whole_numbers_are_float():
    mt = MarketTradeList([updown.MarketTrade.from_json({"time": "2026-04-29T13:00:01Z", "outcome": "Up", "price": 1,
                                                        "size": 10, "side": "BUY", "fee_rate_bps": 0})])
    assert floats(mt.to_frame(), "price", "size", "fee_rate_bps") == {}
    s = SnapshotList([updown.Snapshot.from_json({"time": "2026-04-29T13:00:00Z", "coin_price": 77000, "price_up": 1,
                                                 "price_down": 0})])
    assert floats(s.to_frame(), "coin_price", "price_up", "price_down") == {}


def test_unresolved_markets_have_float_columns():
    df = MarketList([updown.Market.from_json(MARKET)]).to_frame()
    assert floats(df, "coin_price_start", "coin_price_end", "final_volume", "final_liquidity") == {}


def test_replay_frames_are_float_and_have_columns_when_empty():
    trade = {"type": "ENTRY", "reason": "SIGNAL", "time": "2026-04-29T13:00:00Z", "price": 0.5, "fill_price": 0.5,
             "shares": 100, "slippage": 0, "fee": 0, "position_pnl": 0, "cumulative_pnl": 0, "coin_price": 77000}
    point = {"time": "2026-04-29T13:00:00Z", "pnl": 0, "unrealized_pnl": 0, "price": 0.5, "coin_price": 77000,
             "in_position": False}
    r = updown.ReplayResult.from_json({"trades": [trade], "pnl_curve": [point], "total_snapshots": 1})
    assert floats(r.trades_frame(), "shares", "slippage", "fee", "position_pnl", "cumulative_pnl", "coin_price") == {}
    assert floats(r.equity_frame(), "pnl", "unrealized_pnl", "price", "coin_price") == {}
    empty = updown.ReplayResult.from_json({"trades": [], "pnl_curve": [], "total_snapshots": 0})
    assert {"type", "reason", "time", "fill_price", "shares", "position_pnl"} <= set(empty.trades_frame().columns)
    assert {"time", "pnl", "unrealized_pnl", "in_position"} <= set(empty.equity_frame().columns)


def test_trials_frame_figures_are_float():
    summary = {"n_markets": 2, "n_markets_traded": 1, "n_trades": 3, "total_pnl": -48, "total_fees": 0,
               "win_rate": 0, "sharpe_daily_ann": None, "sortino_daily_ann": None}
    s = updown.Sweep.from_json({"sweep_id": "sw", "status": "DONE", "results": {"trials": [
        {"trial": 0, "parameters": [{"path": "/positionSize", "value": 10}], "train": summary, "test": summary,
         "train_objective": -48, "test_objective": -48}]}})
    df = s.trials_frame()
    assert floats(df, "train_objective", "test_objective", "train.total_pnl", "train.total_fees",
                  "train.sharpe_daily_ann", "test.sortino_daily_ann") == {}
    assert str(df["train.n_trades"].dtype) == "Int64"


def test_trials_frame_counts_have_one_dtype_whatever_the_split():
    # A NONE split has no test markets: test's counts were object columns
    # of None (df["test.n_trades"] > 5 raised TypeError), int64 under a
    # split with test markets. Both are nullable Int64, as train's.
    summary = {"n_markets": 2, "n_markets_traded": 1, "n_trades": 3, "total_pnl": 1.5}
    trial = {"trial": 0, "parameters": [{"path": "/positionSize", "value": 10}], "train": summary,
             "train_objective": 1.5, "test_objective": None}
    none = updown.Sweep.from_json({"sweep_id": "sw", "status": "DONE", "results": {"trials": [dict(trial, test=None)]}})
    holdout = updown.Sweep.from_json({"sweep_id": "sw", "status": "DONE", "results": {"trials": [dict(trial, test=summary)]}})
    a, b = none.trials_frame(), holdout.trials_frame()
    counts = [f"{p}.{c}" for p in ("train", "test") for c in ("n_markets", "n_markets_traded", "n_trades")]
    assert {c: str(a[c].dtype) for c in counts} == {c: "Int64" for c in counts}
    assert {c: str(b[c].dtype) for c in counts} == {c: "Int64" for c in counts}
    assert a["test.n_trades"].isna().all() and not (a["test.n_trades"] > 5).any() and b["test.n_trades"].iloc[0] == 3
    assert list(pd.concat([a, b])["test.n_trades"].isna()) == [True, False]


def test_a_value_that_is_not_a_number_raises():
    # NaN would hide it: it is not what the API sends
    t = TradeList([updown.Trade.from_json({"id": 1, "price": "cheap", "qty": 15, "quoteQty": 2940,
                                           "time": 1795934737146, "isBuyerMaker": False})])
    with pytest.raises((ValueError, TypeError)):
        t.to_frame()


def test_gtc_replay_frames_are_float_and_have_columns_when_empty():
    # A GTC replay's maker fields and its orders list: a whole positionSize
    # (JSON 50) is an orders frame's shares, a maker rebate of 0 (a market
    # without a fee schedule) its trades' maker_rebate; neither may be int64,
    # and a replay that placed nothing still has the columns.
    trade = {"type": "ENTRY", "reason": "SIGNAL", "time": "2026-04-29T13:00:00Z", "price": 0.5, "fill_price": 0.5,
             "shares": 50, "slippage": 0, "fee": 0, "position_pnl": 0, "cumulative_pnl": 0, "coin_price": 77000,
             "liquidity": "MAKER", "maker_rebate": 0}
    order = {"time": "2026-04-29T13:00:00Z", "action": "PLACED", "side": "BUY", "price": 1, "shares": 50,
             "reason": "SIGNAL"}
    r = updown.ReplayResult.from_json({"trades": [trade], "orders": [order], "total_snapshots": 1})
    assert floats(r.trades_frame(), "maker_rebate") == {}
    assert floats(r.orders_frame(), "price", "shares") == {}
    assert str(r.orders_frame()["time"].dtype).startswith("datetime64")
    assert not r.orders_truncated
    assert updown.ReplayResult.from_json({"orders": [order], "orders_truncated": True}).orders_truncated
    empty = updown.ReplayResult.from_json({"trades": [], "orders": [], "total_snapshots": 0})
    assert {"liquidity", "maker_rebate"} <= set(empty.trades_frame().columns)
    assert {"time", "action", "side", "price", "shares", "reason"} <= set(empty.orders_frame().columns)


def test_backtest_frame_figures_are_float_and_end_time_is_a_time():
    # A backtest's per-market rows (/strategy, /run): a market without fees
    # (total_fees 0) or whose best trade lost a whole dollar (-1) came out
    # int64, so the dtypes of two backtests differed; each market's
    # end_time, in the answer, was left out of the frame; and a backtest
    # whose markets all failed had no performance columns.
    perf = {"total_pnl": -48, "total_pnl_percent": -12, "total_fees": 0, "max_drawdown": 50,
            "max_drawdown_percent": 50, "total_trades": 3, "winning_trades": 0, "losing_trades": 3, "win_rate": 0,
            "avg_trade_pnl": -16, "best_trade": -1, "worst_trade": -24, "time_in_position_pct": 50,
            "final_market_outcome": "Down"}
    b = updown.Backtest.from_json({"aggregate": {}, "results": [
        {"slug": "btc-updown-15m-2", "end_time": "2026-04-29T13:30:00.000000Z", "performance": perf},
        {"slug": "btc-updown-15m-1", "end_time": "2026-04-29T13:15:00.000000Z",
         "error": {"code": "NO_DATA", "message": "no snapshots"}}]})
    df = b.to_frame()
    assert floats(df, "total_pnl", "total_pnl_percent", "total_fees", "max_drawdown", "max_drawdown_percent",
                  "win_rate", "avg_trade_pnl", "best_trade", "worst_trade", "time_in_position_pct") == {}
    assert str(df["end_time"].dtype).startswith("datetime64")
    assert list(df["error_code"]) == [None, "NO_DATA"]
    failed = updown.Backtest.from_json({"results": [{"slug": "btc-updown-15m-1", "end_time": "2026-04-29T13:15:00Z",
                                                     "error": {"code": "NO_DATA", "message": "no snapshots"}}]})
    assert {"slug", "end_time", "total_pnl", "total_trades", "win_rate", "error_code"} <= set(failed.to_frame().columns)
    assert floats(failed.to_frame(), "total_pnl", "win_rate") == {}


def test_backtest_frame_counts_have_one_dtype():
    # total_trades, winning_trades and losing_trades were int64 when every
    # market replayed, float64 beside a failed market and object (None)
    # when every market failed: nullable Int64 in all three.
    perf = {"total_pnl": -48, "total_trades": 3, "winning_trades": 0, "losing_trades": 3}
    ok = {"slug": "a", "end_time": "2026-04-29T13:30:00Z", "performance": perf}
    bad = {"slug": "b", "end_time": "2026-04-29T13:15:00Z", "error": {"code": "NO_DATA", "message": "x"}}
    counts = ("total_trades", "winning_trades", "losing_trades")
    for results in ([ok], [ok, bad], [bad]):
        df = updown.Backtest.from_json({"results": results}).to_frame()
        assert {c: str(df[c].dtype) for c in counts} == dict.fromkeys(counts, "Int64"), results
    mixed = updown.Backtest.from_json({"results": [ok, bad]}).to_frame()
    assert list(mixed["total_trades"].isna()) == [False, True] and mixed["total_trades"].iloc[0] == 3


def test_a_markets_fee_exponent_has_one_dtype():
    # fee_exponent is null for a market without a fee schedule (DESIGN 9):
    # a page of such markets made the column object, a page mixing them
    # float64 (1.0 beside NaN), a page of markets with one int64; pages did
    # not concatenate alike. It is the nullable integer Int64 on every page.
    with_fees = dict(MARKET, fee_exponent=1, taker_fee_rate=0.07)
    without = dict(MARKET, slug="btc-updown-15m-2", fee_exponent=None, taker_fee_rate=None)
    for markets in ([with_fees], [without], [with_fees, without], []):
        df = MarketList([updown.Market.from_json(m) for m in markets]).to_frame()
        assert str(df["fee_exponent"].dtype) == "Int64", (markets, df["fee_exponent"].dtype)
    assert list(MarketList([updown.Market.from_json(with_fees)]).to_frame()["fee_exponent"]) == [1]


def test_a_replays_times_are_utc_datetimes_and_its_frames_unchanged():
    # Every other time the client answers (a market's, a snapshot's, a
    # sweep's) is an aware UTC datetime; a replay's trade events, equity
    # points, orders and market times stayed strings, so r.trades[1]["time"]
    # - r.trades[0]["time"] raised TypeError, while the frames had times.
    from datetime import datetime, timezone
    trade = {"type": "ENTRY", "reason": "SIGNAL", "time": "2026-04-29T13:00:01.250000Z", "price": 0.5,
             "fill_price": 0.5, "shares": 10, "slippage": 0, "fee": 0, "position_pnl": 0, "cumulative_pnl": 0,
             "coin_price": 77000}
    exit_ = dict(trade, type="EXIT", time="2026-04-29T13:05:00.000000Z")
    point = {"time": "2026-04-29T13:00:01.250000Z", "pnl": 0, "unrealized_pnl": 0, "price": 0.5, "coin_price": 77000,
             "in_position": True}
    order = {"time": "2026-04-29T13:00:00.900000Z", "action": "PLACED", "side": "BUY", "price": 0.5, "shares": 10,
             "reason": "SIGNAL"}
    market = {"slug": "btc-updown-15m-1", "market_type": "15m", "winner": "Up",
              "start_time": "2026-04-29T13:00:00.000000Z", "end_time": "2026-04-29T13:15:00.000000Z"}
    d = {"market": market, "trades": [trade, exit_], "pnl_curve": [point], "orders": [order], "total_snapshots": 3}
    r = updown.ReplayResult.from_json(d)
    t0 = datetime(2026, 4, 29, 13, 0, 1, 250000, tzinfo=timezone.utc)
    assert r.trades[0]["time"] == t0 and r.pnl_curve[0]["time"] == t0
    assert (r.trades[1]["time"] - r.trades[0]["time"]).total_seconds() == 298.75
    assert r.orders[0]["time"] == datetime(2026, 4, 29, 13, 0, 0, 900000, tzinfo=timezone.utc)
    assert (r.market["end_time"] - r.market["start_time"]).total_seconds() == 900
    assert r.market["start_time"].tzinfo is not None and r.market["slug"] == "btc-updown-15m-1"
    # raw keeps the answer as it came; the frames' times are as before.
    assert r.raw["trades"][0]["time"] == "2026-04-29T13:00:01.250000Z" and r.raw["market"] is market
    for df in (r.trades_frame(), r.equity_frame(), r.orders_frame()):
        assert str(df["time"].dtype) == "datetime64[ns, UTC]"
    assert list(r.trades_frame()["time"]) == [pd.Timestamp(trade["time"]), pd.Timestamp(exit_["time"])]


def test_a_backtests_market_end_times_are_utc_datetimes():
    # Each market's end_time in a backtest's results stayed a string, where
    # the frame and every other result of the client have times.
    from datetime import datetime, timezone
    b = updown.Backtest.from_json({"results": [
        {"slug": "btc-updown-15m-2", "end_time": "2026-04-29T13:30:00.000000Z", "performance": {"total_pnl": 1}},
        {"slug": "btc-updown-15m-1", "error": {"code": "NO_DATA", "message": "no snapshots"}}]})
    assert b.results[0]["end_time"] == datetime(2026, 4, 29, 13, 30, tzinfo=timezone.utc)
    assert "end_time" not in b.results[1] and b.raw["results"][0]["end_time"] == "2026-04-29T13:30:00.000000Z"
    df = b.to_frame()
    assert str(df["end_time"].dtype) == "datetime64[ns, UTC]" and df["end_time"].iloc[0] == b.results[0]["end_time"]


def test_an_empty_lists_frame_has_the_dtypes_of_a_full_one():
    # An empty page's frame (a depth range before the history, a replay
    # without equity points) had object columns where a full one has
    # int64 or bool: last_update_id, a trade's id and is_buyer_maker, an
    # equity point's in_position. pd.concat of pages then gave object.
    from updown.models import DepthList
    depth = {"symbol": "BTCUSDT", "time_epoch_ms": 1795934737146, "coin_price": 91000.5,
             "bids": [{"price": 91000, "quantity": 1}], "asks": [{"price": 91001, "quantity": 2}], "last_update_id": 7}
    trade = {"id": 1, "price": 196.5, "qty": 15, "quoteQty": 2940, "time": 1795934737146, "isBuyerMaker": False}
    point = {"time": "2026-04-29T13:00:00Z", "pnl": 0, "unrealized_pnl": 0, "price": 0.5, "coin_price": 77000,
             "in_position": False}
    pairs = [(DepthList([updown.DepthSnapshot.from_json(depth)]).to_frame(), DepthList().to_frame()),
             (TradeList([updown.Trade.from_json(trade)]).to_frame(), TradeList().to_frame()),
             (MarketList([updown.Market.from_json(MARKET)]).to_frame(), MarketList().to_frame()),
             (updown.ReplayResult.from_json({"pnl_curve": [point]}).equity_frame(),
              updown.ReplayResult.from_json({}).equity_frame())]
    for full, empty in pairs:
        assert len(empty) == 0
        want = {c: str(t) for c, t in full.dtypes.items()}
        got = {c: str(t) for c, t in empty.dtypes.items() if c in want}
        assert got == want
        assert str(pd.concat([empty, full]).dtypes.to_dict()) == str(full.dtypes.to_dict())


def test_a_numeric_parameters_column_is_float_whatever_its_values():
    # A parameter swept over whole numbers (/positionSize 10, 20; a range
    # from 1 step 1) was an int64 column, over 10 and 12.5 float64: the
    # frames of two sweeps of one parameter differed, and both differed
    # from the trials' Parquet and CSV (a double column). An enum stays
    # text.
    def sweep(values, enum):
        trials = [{"trial": i, "parameters": [{"path": "/positionSize", "value": v}, {"path": "/orderType", "value": enum}],
                   "train": {"n_trades": 1}, "train_objective": 1.0, "test_objective": None}
                  for i, v in enumerate(values)]
        return updown.Sweep.from_json({"sweep_id": "sw", "status": "DONE", "results": {"trials": trials}}).trials_frame()
    whole, half = sweep([10, 20], "MARKET"), sweep([10, 12.5], "LIMIT")
    assert str(whole["/positionSize"].dtype) == str(half["/positionSize"].dtype) == "float64"
    assert list(whole["/positionSize"]) == [10.0, 20.0] and list(whole["/orderType"]) == ["MARKET", "MARKET"]
    assert str(whole["/orderType"].dtype) == "object"


def test_a_market_orders_trades_frame_has_every_column():
    # A MARKET replay's events have no liquidity or maker_rebate (the API
    # leaves them out): its frame still has them, as an empty or a GTC
    # replay's has, so frames of MARKET and GTC replays concatenate and
    # df.maker_rebate.sum() works on either.
    trade = {"type": "ENTRY", "reason": "SIGNAL", "time": "2026-04-29T13:00:00Z", "price": 0.5, "fill_price": 0.5,
             "shares": 100, "slippage": 0, "fee": 0, "position_pnl": 0, "cumulative_pnl": 0, "coin_price": 77000}
    df = updown.ReplayResult.from_json({"trades": [trade], "pnl_curve": [], "total_snapshots": 1}).trades_frame()
    empty = updown.ReplayResult.from_json({"trades": [], "pnl_curve": [], "total_snapshots": 0}).trades_frame()
    assert list(df.columns) == list(empty.columns)
    assert str(df["maker_rebate"].dtype) == "float64"
    assert df["maker_rebate"].isna().all() and df["liquidity"].isna().all()


def test_a_markets_snapshots_frame_has_no_slug_column():
    # slug is a column of series() only, whose snapshots are of many markets.
    s = SnapshotList([updown.Snapshot.from_json({"time": "2026-04-29T13:00:00Z", "coin_price": 77000, "price_up": 0.5,
                                                 "price_down": 0.5})])
    assert list(s.to_frame().columns) == ["time", "coin_price", "price_up", "price_down"]


def test_an_empty_snapshots_frame_has_the_columns_of_a_full_one():
    # A market's snapshots in a range that holds none (snapshots_frame(slug,
    # start=...)) gave a frame with a slug column its full frames have not,
    # so pd.concat of pages grew a column of NaN; slug is a column of
    # series() only, whose frame has it empty or not.
    from updown.models import snapshot_list
    book = {"asks": [{"price": 0.51, "size": 10}], "bids": [{"price": 0.49, "size": 10}]}
    snap = {"time": "2026-04-29T13:00:00Z", "coin_price": 77000, "price_up": 0.5, "price_down": 0.5}
    for books in (False, True):
        s = dict(snap, orderbook_up=book, orderbook_down=book) if books else snap
        one = snapshot_list(books)([updown.Snapshot.from_json(s)]).to_frame()
        assert list(snapshot_list(books)().to_frame().columns) == list(one.columns)
        assert "slug" not in one.columns
        tagged = snapshot_list(books, tagged=True)
        one = tagged([updown.Snapshot.from_json(s, slug="btc-updown-15m-1")]).to_frame()
        assert list(tagged().to_frame().columns) == list(one.columns) and one.columns[0] == "slug"


def test_is_best_match_has_one_dtype_for_spot_and_futures():
    # Spot trades say isBestMatch, futures trades leave it out (SPEC 2.5):
    # the column was bool for spot and object of None for futures or an
    # empty page, so spot and futures frames concatenated as object. It is
    # pandas' nullable boolean in every frame, <NA> where absent.
    base = {"id": 1, "price": 196.5, "qty": 1.5, "quoteQty": 294.75, "time": 1795934737146, "isBuyerMaker": False}
    spot = TradeList([updown.Trade.from_json(dict(base, isBestMatch=True))]).to_frame()
    future = TradeList([updown.Trade.from_json(base)]).to_frame()
    empty = TradeList().to_frame()
    for df in (spot, future, empty):
        assert str(df["is_best_match"].dtype) == "boolean"
    assert bool(spot["is_best_match"][0]) is True and future["is_best_match"].isna().all()
    assert str(pd.concat([spot, future])["is_best_match"].dtype) == "boolean"
