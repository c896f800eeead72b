"""Typed results. Each keeps the answer's JSON as `raw`; lists of results
have to_frame() (pandas, imported only when called)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Generic, Iterable, List, Optional, TypeVar

T = TypeVar("T")


def parse_time(s: Optional[str]) -> Optional[datetime]:
    """An ISO 8601 time of the API as an aware UTC datetime."""
    if s is None:
        return None
    return datetime.fromisoformat(iso_for_python(s)).astimezone(timezone.utc)


def iso_for_python(s: str) -> str:
    """An ISO 8601 time as datetime.fromisoformat of every Python the
    package supports reads it: before 3.11 it takes no Z and exactly 3 or 6
    fractional digits."""
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    if "." in s:
        head, frac = s.split(".", 1)
        i = 0
        while i < len(frac) and frac[i].isdigit():
            i += 1
        digits, rest = frac[:i], frac[i:]
        s = head + "." + (digits + "000000")[:6] + rest
    return s


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def _pandas():
    try:
        import pandas as pd  # noqa: F401
    except ImportError as e:  # pragma: no cover - exercised without pandas
        raise ImportError("to_frame() needs pandas: pip install pandas (or apt install python3-pandas)") from e
    return pd


class Records(List[T], Generic[T]):
    """A list of results that converts to a pandas DataFrame."""

    _row: Callable[[Any], Dict[str, Any]] = staticmethod(lambda r: dict(r.__dict__))
    _times: tuple = ()
    # The columns of an empty list's frame, so that code written for rows
    # (df.pivot(index="time", ...)) meets an empty frame, not a KeyError.
    _columns: tuple = ()
    # Numeric columns that are float64 whatever the rows hold: JSON writes a
    # whole price or size as 15, not 15.0, and a column null on every row
    # would be object, so a frame's dtypes would depend on its data.
    _floats: tuple = ()
    # Whole-number columns that may be null: pandas' nullable Int64 (int64
    # with none null, float64 with some, object with all would differ by page).
    _ints: tuple = ()
    # Yes/no columns that may be absent or null: pandas' nullable boolean
    # (bool with none null, object with some would differ by page).
    _bools: tuple = ()
    # The dtypes of an empty list's columns that are never null, as the
    # rows make them (an empty frame's columns are object otherwise).
    _empty: Dict[str, str] = {}
    # Whether a full list's frame has every one of _columns too, null where
    # the rows leave it out (not so for snapshots: slug is a series' only).
    _every_column: bool = False

    def to_frame(self):
        pd = _pandas()
        cls = type(self)
        rows = [cls._row(r) for r in self]
        if rows:
            df = pd.DataFrame(rows)
            if cls._every_column and any(c not in df.columns for c in cls._columns):
                # A field the API leaves out of these rows (a MARKET replay's
                # events have no liquidity or maker_rebate) is still a column,
                # null, as in an empty list's frame: frames concatenate alike.
                df = df.reindex(columns=list(cls._columns) + [c for c in df.columns if c not in cls._columns])
        else:
            df = pd.DataFrame({c: pd.Series(dtype=cls._empty.get(c, object)) for c in cls._columns})
        for col in cls._times:
            if col in df.columns:
                df[col] = pd.to_datetime(df[col], utc=True)
        for col in cls._ints:
            if col in df.columns:
                df[col] = pd.array(df[col].astype(object).where(df[col].notna(), None).tolist(), dtype="Int64")
        for col in cls._bools:
            if col in df.columns:
                df[col] = pd.array(df[col].astype(object).where(df[col].notna(), None).tolist(), dtype="boolean")
        return _as_floats(pd, df, cls._floats)


def _as_floats(pd, df, cols):
    """df with each of cols it has as float64 (None as NaN). A value that is
    not a number raises: it is not the API's, and NaN would hide it."""
    for col in cols:
        if col in df.columns:
            df[col] = pd.to_numeric(df[col].astype(object).where(df[col].notna(), None), errors="raise").astype("float64")
    return df


@dataclass
class Level:
    price: float
    size: float


@dataclass
class OrderBook:
    bids: List[Level]
    asks: List[Level]

    @classmethod
    def from_json(cls, d: Optional[Dict[str, Any]]) -> Optional["OrderBook"]:
        if d is None:
            return None
        return cls(
            bids=[Level(l["price"], l["size"]) for l in d.get("bids") or []],
            asks=[Level(l["price"], l["size"]) for l in d.get("asks") or []],
        )

    @property
    def best_bid(self) -> Optional[float]:
        return self.bids[0].price if self.bids else None

    @property
    def best_ask(self) -> Optional[float]:
        return self.asks[0].price if self.asks else None


@dataclass
class Market:
    slug: str
    market_id: str
    event_id: str
    market_type: str
    start_time: datetime
    end_time: datetime
    coin_price_start: Optional[float]
    coin_price_end: Optional[float]
    condition_id: str
    clob_token_up: str
    clob_token_down: str
    winner: Optional[str]
    final_volume: Optional[float]
    final_liquidity: Optional[float]
    resolved_at: Optional[datetime]
    created_at: Optional[datetime]
    updated_at: Optional[datetime]
    # DESIGN 9: the fee schedule, tick size and Polymarket's reference
    # prices (None where the market has none), and where its data came from.
    upstream_slug: Optional[str] = None
    taker_fee_rate: Optional[float] = None
    fee_exponent: Optional[int] = None
    # The fee curve as Polymarket names it: "crypto_fees_v2", or
    # "crypto_fees" (early 2026), whose fee is the schedule's times p.
    fee_type: Optional[str] = None
    maker_rebate_rate: Optional[float] = None
    tick_size: Optional[float] = None
    min_order_size: Optional[float] = None
    resolution_source: Optional[str] = None
    price_to_beat: Optional[float] = None
    final_price: Optional[float] = None
    data_sources: List[str] = field(default_factory=list)
    # Changes of the tick size seen while recording, oldest first: {"time"
    # (datetime), "tick_size"}.
    tick_size_changes: List[Dict[str, Any]] = field(default_factory=list)
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def coin(self) -> str:
        return self.slug.split("-", 1)[0].upper()

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Market":
        return cls(
            slug=d["slug"], market_id=d.get("market_id", ""), event_id=d.get("event_id", ""),
            market_type=d.get("market_type", ""),
            start_time=parse_time(d["start_time"]), end_time=parse_time(d["end_time"]),
            coin_price_start=d.get("coin_price_start"), coin_price_end=d.get("coin_price_end"),
            condition_id=d.get("condition_id", ""), clob_token_up=d.get("clob_token_up", ""),
            clob_token_down=d.get("clob_token_down", ""), winner=d.get("winner"),
            final_volume=d.get("final_volume"), final_liquidity=d.get("final_liquidity"),
            resolved_at=parse_time(d.get("resolved_at")), created_at=parse_time(d.get("created_at")),
            updated_at=parse_time(d.get("updated_at")),
            upstream_slug=d.get("upstream_slug"), taker_fee_rate=d.get("taker_fee_rate"),
            fee_exponent=d.get("fee_exponent"), fee_type=d.get("fee_type"),
            maker_rebate_rate=d.get("maker_rebate_rate"),
            tick_size=d.get("tick_size"), min_order_size=d.get("min_order_size"),
            resolution_source=d.get("resolution_source"), price_to_beat=d.get("price_to_beat"),
            final_price=d.get("final_price"), data_sources=list(d.get("data_sources") or []),
            tick_size_changes=[{"time": parse_time(c.get("time")), "tick_size": c.get("tick_size")}
                               for c in d.get("tick_size_changes") or []], raw=d,
        )


def _market_row(m: Market) -> Dict[str, Any]:
    row = {k: v for k, v in m.__dict__.items() if k != "raw"}
    row["coin"] = m.coin
    return row


class MarketList(Records[Market]):
    _row = staticmethod(_market_row)
    _times = ("start_time", "end_time", "resolved_at", "created_at", "updated_at")
    _columns = tuple(f.name for f in fields(Market) if f.name != "raw") + ("coin",)
    _floats = ("coin_price_start", "coin_price_end", "final_volume", "final_liquidity", "taker_fee_rate",
               "maker_rebate_rate", "tick_size", "min_order_size", "price_to_beat", "final_price")
    _ints = ("fee_exponent",)


@dataclass
class MarketPage:
    markets: MarketList
    total: int
    limit: int
    offset: int
    warning: Optional[str]

    def to_frame(self):
        return self.markets.to_frame()


@dataclass
class Snapshot:
    time: datetime
    coin_price: float
    price_up: float
    price_down: float
    orderbook_up: Optional[OrderBook] = None
    orderbook_down: Optional[OrderBook] = None
    slug: Optional[str] = None  # set when snapshots of several markets are listed together

    @classmethod
    def from_json(cls, d: Dict[str, Any], slug: Optional[str] = None) -> "Snapshot":
        return cls(
            time=parse_time(d["time"]), coin_price=d["coin_price"], price_up=d["price_up"], price_down=d["price_down"],
            orderbook_up=OrderBook.from_json(d.get("orderbook_up")),
            orderbook_down=OrderBook.from_json(d.get("orderbook_down")), slug=slug,
        )


def _levels(ls: List[Level]) -> List[Dict[str, float]]:
    return [{"price": l.price, "size": l.size} for l in ls]


def _snapshot_row(s: Snapshot) -> Dict[str, Any]:
    row: Dict[str, Any] = {}
    if s.slug is not None:
        row["slug"] = s.slug
    row.update(time=s.time, coin_price=s.coin_price, price_up=s.price_up, price_down=s.price_down)
    for side, book in (("up", s.orderbook_up), ("down", s.orderbook_down)):
        if book is None:
            continue
        row[f"best_bid_{side}"] = book.best_bid
        row[f"best_ask_{side}"] = book.best_ask
        row[f"bids_{side}"] = _levels(book.bids)
        row[f"asks_{side}"] = _levels(book.asks)
    return row


class SnapshotList(Records[Snapshot]):
    """Snapshots; to_frame() flattens books to best bid/ask plus the levels
    as lists of {price, size}."""

    _row = staticmethod(_snapshot_row)
    _times = ("time",)
    _columns = ("time", "coin_price", "price_up", "price_down")
    _floats = ("coin_price", "price_up", "price_down", "best_bid_up", "best_ask_up", "best_bid_down", "best_ask_down")


class _BookSnapshotList(SnapshotList):
    """Snapshots read with include_orderbook: an empty list's frame has the
    book columns too, as every snapshot's row has them."""

    _columns = SnapshotList._columns + tuple(f"{c}_{side}" for side in ("up", "down")
                                            for c in ("best_bid", "best_ask", "bids", "asks"))


class _TaggedSnapshotList(SnapshotList):
    """Snapshots of several markets (series()), each tagged with its
    market's slug: slug is their frame's first column, empty or not."""

    _columns = ("slug",) + SnapshotList._columns


class _TaggedBookSnapshotList(_BookSnapshotList):
    _columns = ("slug",) + _BookSnapshotList._columns


def snapshot_list(include_orderbook: bool, tagged: bool = False) -> type:
    """The list type of snapshots read with or without books, tagged with
    their markets' slugs (series()) or not (one market's)."""
    if tagged:
        return _TaggedBookSnapshotList if include_orderbook else _TaggedSnapshotList
    return _BookSnapshotList if include_orderbook else SnapshotList


@dataclass
class SnapshotPage:
    market: Market
    snapshots: SnapshotList
    total: int
    matched: int
    limit: int
    offset: int
    next_cursor: Optional[str]

    def to_frame(self):
        return self.snapshots.to_frame()


@dataclass
class Chart:
    """A market downsampled for a chart (GET /v1/markets/{slug}/series,
    DESIGN 12): the window cut into buckets of bucket_ms, and for each
    bucket that has snapshots its first snapshot's time and position
    (index, 0 the oldest) and the first, min and max of price_up,
    price_down and coin_price, so that spikes survive. snapshots counts
    all the market's."""

    market: Market
    points: int
    bucket_ms: int
    snapshots: int
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Chart":
        return cls(market=Market.from_json(d["market"]), points=d.get("points", 0), bucket_ms=d.get("bucket_ms", 0),
                   snapshots=d.get("snapshots", 0), raw=d)

    def to_frame(self):
        """One row a bucket: time (UTC), index, and price_up_first,
        price_up_min, price_up_max and the same of price_down and
        coin_price."""
        pd = _pandas()
        df = pd.DataFrame({"time": pd.to_datetime(pd.Series(self.raw.get("time") or [], dtype="int64"), unit="ms", utc=True),
                           "index": pd.Series(self.raw.get("index") or [], dtype="int64")})
        for name in ("price_up", "price_down", "coin_price"):
            band = self.raw.get(name) or {}
            for part in ("first", "min", "max"):
                df[f"{name}_{part}"] = pd.Series(band.get(part) or [], dtype="float64")
        return df


@dataclass
class DepthLevel:
    price: float
    quantity: float


@dataclass
class DepthSnapshot:
    symbol: str
    time: datetime
    coin_price: float
    bids: List[DepthLevel]
    asks: List[DepthLevel]
    last_update_id: int

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "DepthSnapshot":
        return cls(
            symbol=d["symbol"], time=from_ms(d["time_epoch_ms"]), coin_price=d["coin_price"],
            bids=[DepthLevel(l["price"], l["quantity"]) for l in d.get("bids") or []],
            asks=[DepthLevel(l["price"], l["quantity"]) for l in d.get("asks") or []],
            last_update_id=d["last_update_id"],
        )


def _depth_row(d: DepthSnapshot) -> Dict[str, Any]:
    return {
        "symbol": d.symbol, "time": d.time, "coin_price": d.coin_price,
        "best_bid": d.bids[0].price if d.bids else None, "best_ask": d.asks[0].price if d.asks else None,
        "bids": [{"price": l.price, "quantity": l.quantity} for l in d.bids],
        "asks": [{"price": l.price, "quantity": l.quantity} for l in d.asks],
        "last_update_id": d.last_update_id,
    }


class DepthList(Records[DepthSnapshot]):
    _row = staticmethod(_depth_row)
    _times = ("time",)
    _columns = ("symbol", "time", "coin_price", "best_bid", "best_ask", "bids", "asks", "last_update_id")
    _floats = ("coin_price", "best_bid", "best_ask")
    _empty = {"last_update_id": "int64"}


@dataclass
class DepthPage:
    data: DepthList
    total: int
    limit: int
    offset: int
    next_cursor: Optional[str]
    warning: Optional[str]

    def to_frame(self):
        return self.data.to_frame()


@dataclass
class LatestDepth:
    """The latest depth of a coin's spot or futures market. time is when
    the collector took it (the answer's Last-Modified, to the second; None
    when the server did not say): a collector that stopped hearing from
    Binance leaves the last depth served, and time says how old it is."""

    coin_price: float
    bids: List[DepthLevel]
    asks: List[DepthLevel]
    time: Optional[datetime] = None


@dataclass
class Trade:
    """An exchange trade."""

    id: int
    price: float
    qty: float
    quote_qty: float
    time: datetime
    is_buyer_maker: bool
    is_best_match: Optional[bool] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Trade":
        return cls(id=d["id"], price=d["price"], qty=d["qty"], quote_qty=d["quoteQty"], time=from_ms(d["time"]),
                   is_buyer_maker=d["isBuyerMaker"], is_best_match=d.get("isBestMatch"))


class TradeList(Records[Trade]):
    _times = ("time",)
    _columns = tuple(f.name for f in fields(Trade))
    _floats = ("price", "qty", "quote_qty")
    _empty = {"id": "int64", "is_buyer_maker": "bool"}
    # Spot trades say it, futures trades leave it out (SPEC 2.5).
    _bools = ("is_best_match",)


@dataclass
class MarketTrade:
    """A trade on a market's order book (a last_trade_price event)."""

    time: datetime
    outcome: str
    price: float
    size: float
    side: str
    fee_rate_bps: float
    tx_hash: str = ""  # the settlement transaction; "" when the upstream did not name it

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "MarketTrade":
        return cls(time=parse_time(d["time"]), outcome=d["outcome"], price=d["price"], size=d["size"],
                   side=d["side"], fee_rate_bps=d.get("fee_rate_bps", 0.0), tx_hash=d.get("tx_hash") or "")


class MarketTradeList(Records[MarketTrade]):
    _times = ("time",)
    _columns = tuple(f.name for f in fields(MarketTrade))
    _floats = ("price", "size", "fee_rate_bps")


@dataclass
class MarketTradePage:
    """One page of a market's trades: total counts all the market's trades,
    matched those in the requested time range."""

    market: Market
    trades: MarketTradeList
    total: int
    matched: int
    limit: int
    offset: int
    next_cursor: Optional[str]

    def to_frame(self):
        return self.trades.to_frame()


class _HeaderPage:
    """The fields of a page that a CSV or Parquet answer, whose body has no
    place for them, carries as headers: next_cursor (X-Next-Cursor; None
    after the last page), total (X-Total-Count), matched (X-Matched-Count;
    None where the JSON page has none) and warning (X-Warning; None unless
    the plan's window cut the range)."""

    __slots__ = ()
    next_cursor: Optional[str] = None
    total: Optional[int] = None
    matched: Optional[int] = None
    warning: Optional[str] = None

    @classmethod
    def from_answer(cls, content: Any, headers: Dict[str, str]):
        """The page of an answer's content and its (lower-case) headers."""
        page = cls(content)
        page.next_cursor = headers.get("x-next-cursor") or None
        page.total = _header_int(headers.get("x-total-count"))
        page.matched = _header_int(headers.get("x-matched-count"))
        page.warning = headers.get("x-warning") or None
        return page


def _header_int(v: Optional[str]) -> Optional[int]:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


class ParquetPage(_HeaderPage, bytes):
    """One page of a list as a Parquet file's bytes: bytes, with the
    page's next_cursor, total, matched and warning as attributes (from the
    answer's headers), as a JSON page has them."""


class CSVPage(_HeaderPage, str):
    """One page of a list as CSV text, its header row first: a str, with
    the page's next_cursor, total, matched and warning as attributes (from
    the answer's headers), as a JSON page has them."""


class TrialList(List[Dict[str, Any]]):
    """A page of a sweep's trials (GET /v1/sweeps/{id}/trials): a list of
    trials, with the JSON page's total (the sweep's trials), limit and
    offset as attributes, as sweep_trials_parquet() and
    sweep_trials_csv() carry total."""

    total: Optional[int] = None
    limit: Optional[int] = None
    offset: Optional[int] = None


class _Rows(Records[Dict[str, Any]]):
    _row = staticmethod(lambda d: d)
    _every_column = True
    _times = ("time",)


class _TradeRows(_Rows):
    """A replay's trade events (SPEC 2.6)."""

    _columns = ("type", "reason", "time", "price", "fill_price", "shares", "slippage", "fee", "position_pnl",
                "cumulative_pnl", "coin_price", "liquidity", "maker_rebate")
    _floats = ("price", "fill_price", "shares", "slippage", "fee", "position_pnl", "cumulative_pnl", "coin_price",
               "maker_rebate")


class _OrderRows(_Rows):
    """A GTC replay's orders (DESIGN 6): one action a row."""

    _columns = ("time", "action", "side", "price", "shares", "reason")
    _floats = ("price", "shares")


class _EquityRows(_Rows):
    """A replay's equity points (SPEC 2.6)."""

    _columns = ("time", "pnl", "unrealized_pnl", "price", "coin_price", "in_position")
    _floats = ("pnl", "unrealized_pnl", "price", "coin_price")
    _empty = {"in_position": "bool"}


@dataclass
class Sweep:
    """A parameter sweep (DESIGN 14): its state and progress and, once
    DONE, its results (every trial's train and test statistics, best,
    stability, dsr and pbo). request is the sweep as it runs, its body
    normalized (defaults filled in), keyed as sweep() takes it, so that
    client.sweep(**s.request) runs it again (on the newest markets.count
    markets of the moment, unless markets has start_time and end_time);
    its markets' start_time and end_time are UTC datetimes.
    sweep(wait=False), sweeps() and cancel_sweep() answer none (None):
    get_sweep() reads it."""

    sweep_id: str
    status: str
    trials: int
    markets: int
    replays: int
    progress: Dict[str, Any]
    results: Optional[Dict[str, Any]] = None
    error: Optional[str] = None
    # When it was created and when it ended (None while it runs), UTC.
    created_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    request: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Sweep":
        return cls(sweep_id=d["sweep_id"], status=d["status"], trials=d.get("trials", 0), markets=d.get("markets", 0),
                   replays=d.get("replays", 0), progress=d.get("progress") or {}, results=d.get("results"),
                   error=d.get("error"), created_at=parse_time(d.get("created_at")),
                   finished_at=parse_time(d.get("finished_at")), request=_sweep_request(d.get("request")), raw=d)

    @property
    def done(self) -> bool:
        return self.status in ("DONE", "FAILED", "CANCELLED")

    @property
    def dsr(self) -> Optional[float]:
        return (self.results or {}).get("dsr")

    @property
    def pbo(self) -> Optional[float]:
        return (self.results or {}).get("pbo")

    @property
    def best(self) -> Optional[Dict[str, Any]]:
        return (self.results or {}).get("best")

    def trials_frame(self):
        """One row a trial: its parameters by path, the objective on train
        and test, and the train and test statistics flattened
        (train.total_pnl, test.sqn, ...). A sweep without results, not
        DONE or as sweeps() lists it, raises SweepError rather than give
        an empty frame that would pass for a sweep that found nothing."""
        if self.results is None:
            from .errors import SweepError
            if self.status == "DONE":
                why = "it was read without its results (sweeps() and cancel_sweep() answer none): get_sweep(id) reads them"
            else:
                why = f"it is {self.status}" + (f" ({self.error})" if self.error else "") + ": a sweep has trials once it is DONE"
            raise SweepError(f"sweep {self.sweep_id} has no trials to list: {why}", sweep=self,
                             details={"sweep_id": self.sweep_id, "status": self.status})
        rows = []
        paths: Dict[str, bool] = {}  # each parameter's path: whether every value is a number
        for t in (self.results or {}).get("trials") or []:
            row: Dict[str, Any] = {"trial": t["trial"]}
            for p in t.get("parameters") or []:
                row[p["path"]] = v = p["value"]
                number = v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                paths[p["path"]] = paths.get(p["path"], True) and number
            row["train_objective"], row["test_objective"] = t.get("train_objective"), t.get("test_objective")
            for part in ("train", "test"):
                summary = t.get(part) or {}
                for col in _SUMMARY_COLUMNS:
                    row[f"{part}.{col}"] = _summary_figure(summary, col)
            rows.append(row)
        pd = _pandas()
        df = pd.DataFrame(rows)
        figures = [f"{part}.{col}" for part in ("train", "test") for col in _SUMMARY_COLUMNS if not col.startswith("n_")]
        # The counts are pandas' nullable Int64: a split without test
        # markets (NONE) has none of test's, which would be object columns
        # of None (int64 under a split with test markets).
        for col in (f"{part}.{col}" for part in ("train", "test") for col in _SUMMARY_COLUMNS if col.startswith("n_")):
            if col in df.columns:
                df[col] = pd.array(df[col].astype(object).where(df[col].notna(), None).tolist(), dtype="Int64")
        # A numeric parameter is float64, as the trials' Parquet and CSV
        # have it, whether its values are written 10 or 10.5: its dtype
        # would otherwise depend on the values swept.
        numeric = [path for path, number in paths.items() if number]
        return _as_floats(pd, df, numeric + ["train_objective", "test_objective"] + figures)


def _sweep_request(r: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """A sweep's request with its markets' times as UTC datetimes (raw
    keeps the strings; sweep() sends datetimes as RFC 3339 again)."""
    if not isinstance(r, dict):
        return None
    out = copy.deepcopy(r)
    if isinstance(out.get("markets"), dict):
        out["markets"] = _with_times(out["markets"], "start_time", "end_time")
    return out


# A trial's train and test figures as the trials' CSV and Parquet columns
# name and order them (GET /v1/sweeps/{id}/trials): an interval as its _low
# and _high, pnl_per_market as its figures; the daily and calibration lists
# are left out.
_SUMMARY_COLUMNS = (
    "n_markets", "n_markets_traded", "n_trades", "total_pnl", "total_fees", "win_rate",
    "win_rate_ci95_low", "win_rate_ci95_high", "ev_per_trade", "ev_ci95_low", "ev_ci95_high", "sqn",
    "pnl_per_market_mean", "pnl_per_market_sd", "pnl_per_market_p5", "pnl_per_market_p50", "pnl_per_market_p95",
    "sharpe_per_market", "sharpe_daily_ann", "sortino_daily_ann", "portfolio_max_drawdown",
    "brier_entry", "brier_market", "psr0",
)


def _summary_figure(summary: Dict[str, Any], col: str) -> Any:
    """One column's figure of a trial's train or test statistics (None
    for null, or for a test part a split without test markets lacks)."""
    for name, i in (("win_rate_ci95", {"low": 0, "high": 1}), ("ev_ci95", {"low": 0, "high": 1})):
        if col.startswith(name + "_"):
            v = summary.get(name)
            return v[i[col[len(name) + 1:]]] if isinstance(v, list) and len(v) == 2 else None
    if col.startswith("pnl_per_market_"):
        return (summary.get("pnl_per_market") or {}).get(col[len("pnl_per_market_"):])
    return summary.get(col)


def _with_times(d: Dict[str, Any], *keys: str) -> Dict[str, Any]:
    """A copy of d with each of keys that is a string as a UTC datetime
    (raw keeps the answer's strings)."""
    out = dict(d)
    for k in keys:
        if isinstance(out.get(k), str):
            out[k] = parse_time(out[k])
    return out


def timed_rows(rows: Optional[List[Dict[str, Any]]]) -> List[Dict[str, Any]]:
    """A replay's trade events, equity points or orders with each time as
    a UTC datetime, as every other time the client answers."""
    return [_with_times(r, "time") for r in rows or []]


@dataclass
class ReplayResult:
    """A replay's result (SPEC 2.6, DESIGN 6): performance, trades, the
    equity curve and, for resting (GTC) orders, the orders list; warnings
    say what the replay could not do as asked. Times (each event's, point's
    and order's time, the market's start_time and end_time) are UTC
    datetimes; raw keeps the answer's strings."""

    market: Dict[str, Any]
    strategy: Dict[str, Any]
    performance: Dict[str, Any]
    trades: List[Dict[str, Any]]
    pnl_curve: List[Dict[str, Any]]
    total_snapshots: int
    orders: List[Dict[str, Any]] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    # trades lists some of the events only (performance["trade_events"]
    # counts them all): Client.replay(all_trades=True) fetches the rest.
    trades_truncated: bool = False
    # orders lists the first 1,000 order actions only (the orders_*
    # counters in performance count them all).
    orders_truncated: bool = False
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ReplayResult":
        return cls(market=_with_times(d.get("market") or {}, "start_time", "end_time"),
                   strategy=d.get("strategy", {}), performance=d.get("performance", {}),
                   trades=timed_rows(d.get("trades")), pnl_curve=timed_rows(d.get("pnl_curve")),
                   total_snapshots=d.get("total_snapshots", 0), orders=timed_rows(d.get("orders")),
                   warnings=d.get("warnings") or [], trades_truncated=bool(d.get("trades_truncated")),
                   orders_truncated=bool(d.get("orders_truncated")), raw=d)

    def orders_frame(self):
        """A GTC strategy's orders (PLACED, FILLED, ...), one action a row."""
        return _OrderRows(self.orders).to_frame()

    def trades_frame(self):
        """The trade events, one a row."""
        return _TradeRows(self.trades).to_frame()

    def equity_frame(self):
        """The sampled equity curve, one point a row."""
        return _EquityRows(self.pnl_curve).to_frame()

    def to_frame(self):
        """The trades (see equity_frame for the curve)."""
        return self.trades_frame()


@dataclass
class Account:
    customer_id: str
    email: str
    name: str
    tier: str
    rate_limits: Dict[str, Any]
    # usage's and ai_quota's resets_at are UTC datetimes (the answer's
    # strings are in raw).
    usage: Dict[str, Any]
    ai_quota: Dict[str, Any]
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Account":
        return cls(customer_id=d.get("customer_id", ""), email=d.get("email", ""), name=d.get("name", ""),
                   tier=d.get("tier", ""), rate_limits=d.get("rate_limits", {}),
                   usage=_with_times(d.get("usage") or {}, "resets_at"),
                   ai_quota=_with_times(d.get("ai_quota") or {}, "resets_at"), raw=d)


@dataclass
class Quota:
    """The monthly Backtest AI generation quota (calendar month, UTC):
    limit and remaining are None on an unlimited plan."""

    used: int
    limit: Optional[int]
    remaining: Optional[int]
    resets_at: Optional[datetime]
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Quota":
        return cls(used=d.get("used", 0), limit=d.get("limit"), remaining=d.get("remaining"),
                   resets_at=parse_time(d.get("resets_at")), raw=d)


def _quota(d: Optional[Dict[str, Any]]) -> Optional[Quota]:
    return None if d is None else Quota.from_json(d)


@dataclass
class Generation:
    """A strategy the agent generated (/generate): the replay-ready rules,
    their strategy code, and the quota after the generation."""

    generated_strategy: Dict[str, Any]
    strategy_code: str
    quota: Optional[Quota]
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Generation":
        return cls(generated_strategy=d.get("generated_strategy") or {}, strategy_code=d.get("strategy_code", ""),
                   quota=_quota(d.get("quota")), raw=d)


# A market's replay performance in a backtest's results (SPEC 2.6): a
# market whose replay failed has none, and its row holds None for each.
_PERFORMANCE = ("total_pnl", "total_pnl_percent", "total_fees", "max_drawdown", "max_drawdown_percent", "total_trades",
                "winning_trades", "losing_trades", "win_rate", "avg_trade_pnl", "best_trade", "worst_trade",
                "time_in_position_pct", "final_market_outcome")


def _result_row(r: Dict[str, Any]) -> Dict[str, Any]:
    row: Dict[str, Any] = {"slug": r.get("slug"), "end_time": r.get("end_time")}
    row.update(dict.fromkeys(_PERFORMANCE))
    row.update(r.get("performance") or {})
    err = r.get("error") or {}
    row["error_code"], row["error_message"] = err.get("code"), err.get("message")
    return row


class _Results(Records[Dict[str, Any]]):
    _row = staticmethod(_result_row)
    _times = ("end_time",)
    _columns = ("slug", "end_time") + _PERFORMANCE + ("error_code", "error_message")
    _floats = ("total_pnl", "total_pnl_percent", "total_fees", "max_drawdown", "max_drawdown_percent", "win_rate",
               "avg_trade_pnl", "best_trade", "worst_trade", "time_in_position_pct")
    # A failed market has no counts: int64, float64 or object by the mix.
    _ints = ("total_trades", "winning_trades", "losing_trades")


@dataclass
class Backtest:
    """A strategy backtested across markets (/strategy, /run): aggregate,
    each market's result (its end_time a UTC datetime), the quota, and a
    warning when fewer markets than asked for were available (None
    otherwise)."""

    generated_strategy: Dict[str, Any]
    strategy_code: str
    aggregate: Dict[str, Any]
    results: List[Dict[str, Any]]
    quota: Optional[Quota]
    warning: Optional[str]
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Backtest":
        return cls(generated_strategy=d.get("generated_strategy") or {}, strategy_code=d.get("strategy_code", ""),
                   aggregate=d.get("aggregate") or {}, results=[_with_times(r, "end_time") for r in d.get("results") or []],
                   quota=_quota(d.get("quota")), warning=d.get("warning"), raw=d)

    def to_frame(self):
        """One row a market: its slug and end_time, its performance, or
        its error code and message."""
        return _Results(self.results).to_frame()


@dataclass
class Job:
    """A job that outlasted its request: state while it runs; result (the
    original request's data, the API's raw JSON with ISO time strings) once
    done: ReplayResult.from_json(job.result) or Backtest.from_json(...) gives
    the typed result, whose times are UTC datetimes."""

    id: str
    state: str
    done: bool
    result: Any = None


def records(cls: type, items: Iterable[T]) -> Any:
    out = cls()
    out.extend(items)
    return out
