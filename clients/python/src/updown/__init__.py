"""Python client of the updown API.

    from updown import Client
    c = Client("http://localhost:8080", "ud_dev_pro")
    df = c.snapshots_frame("btc-updown-15m-1777467600", start="2026-04-29T13:00:00Z")
"""

from .client import Agent, Client
from .errors import (
    AuthenticationError, ConnectionError, DataWindowWarning, JobTimeoutError, NotFoundError, PermissionDeniedError, RateLimitError,
    ServerError, SweepError, UpdownError, ValidationError,
)
from .models import (
    Account, Backtest, Chart, DepthLevel, DepthList, DepthPage, DepthSnapshot, Generation, Job, LatestDepth, Level, Market,
    MarketList, MarketPage, MarketTrade, MarketTradeList, MarketTradePage, OrderBook, Quota, ReplayResult, Snapshot,
    SnapshotList, SnapshotPage, Sweep, Trade, TradeList,
)

__all__ = [
    "Account", "Agent", "AuthenticationError", "Backtest", "Chart", "Client", "ConnectionError", "DataWindowWarning", "DepthLevel", "DepthList",
    "DepthPage", "DepthSnapshot", "Generation", "Job", "JobTimeoutError", "LatestDepth", "Level", "Market", "MarketList", "MarketPage",
    "MarketTrade", "MarketTradeList", "MarketTradePage", "NotFoundError", "OrderBook", "PermissionDeniedError", "Quota",
    "RateLimitError", "ReplayResult", "ServerError", "Snapshot", "SnapshotList", "SnapshotPage", "Sweep", "SweepError", "Trade", "TradeList",
    "UpdownError", "ValidationError",
]
__version__ = "0.1.0"
