"""Python client of the updown API.

    from datetime import timedelta
    from updown import Client
    c = Client("http://localhost:8080", "ud_dev_pro")
    m = c.markets("BTC", market_type="15m", resolved=True, limit=1).markets[0]   # the newest resolved
    df = c.snapshots_frame(m.slug, start=m.start_time, end=m.start_time + timedelta(minutes=5))
"""

from .client import VERSION, Agent, Client
from .errors import (
    AuthenticationError, ConnectionError, DataWindowWarning, JobTimeoutError, NotFoundError, PermissionDeniedError, RateLimitError,
    ServerError, SweepError, UpdownError, ValidationError,
)
from .models import (
    Account, Backtest, Chart, CSVPage, DepthLevel, DepthList, DepthPage, DepthSnapshot, Generation, Job, LatestDepth, Level, Market,
    MarketList, MarketPage, MarketTrade, MarketTradeList, MarketTradePage, OrderBook, ParquetPage, Quota, ReplayResult, Snapshot,
    SnapshotList, SnapshotPage, Sweep, Trade, TradeList, TrialList,
)

__all__ = [
    "Account", "Agent", "AuthenticationError", "Backtest", "Chart", "Client", "CSVPage", "ConnectionError", "DataWindowWarning", "DepthLevel", "DepthList",
    "DepthPage", "DepthSnapshot", "Generation", "Job", "JobTimeoutError", "LatestDepth", "Level", "Market", "MarketList", "MarketPage",
    "MarketTrade", "MarketTradeList", "MarketTradePage", "NotFoundError", "OrderBook", "ParquetPage", "PermissionDeniedError", "Quota",
    "RateLimitError", "ReplayResult", "ServerError", "Snapshot", "SnapshotList", "SnapshotPage", "Sweep", "SweepError", "Trade", "TradeList",
    "TrialList", "UpdownError", "ValidationError",
]
__version__ = VERSION
