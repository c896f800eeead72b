"""The updown API client: standard library only (urllib)."""

from __future__ import annotations

import email.utils
import gzip
import http.client
import json
import numbers
import os
import random
import socket
import sys
import time as _time
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zlib
from datetime import date, datetime, timezone
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import errors
from .models import (
    Account, Backtest, Chart, CSVPage, DepthList, DepthPage, DepthLevel, DepthSnapshot, Generation, Job, LatestDepth, Market,
    MarketList, MarketPage, ParquetPage, Quota,
    MarketTrade, MarketTradeList, MarketTradePage, ReplayResult, Snapshot, SnapshotList, SnapshotPage, Sweep, Trade, TradeList,
    TrialList, iso_for_python, parse_time, records, snapshot_list, timed_rows,
)

TimeLike = Union[datetime, date, str, int, float, None]

PARQUET = "application/vnd.apache.parquet"
CSV = "text/csv"

# VERSION is the package's version (updown.__version__), sent in the User-Agent.
VERSION = "0.2.0"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: urllib would send the request's headers, the
    X-API-Key and the agent's bearer token among them, on to whatever host
    the Location names. The API answers no redirects; one from a proxy or
    a moved host is answered as an error that names it."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def _time_param(t: TimeLike) -> Optional[str]:
    """A time as the API takes it: epoch milliseconds (int), ISO 8601
    (str, passed through) or a datetime (naive ones are UTC)."""
    if t is None:
        return None
    if isinstance(t, bool):
        raise TypeError("a time cannot be a bool")
    if type(t).__name__ == "NaTType" or (isinstance(t, numbers.Real) and float(t) != float(t)):
        # pandas' NaT (the max() of an empty frame's times), a NaN: no instant
        raise ValueError(f"a time cannot be {t!r} (NaN or NaT); give None for no bound")
    if isinstance(t, numbers.Real):  # numpy's integers and floats too
        if isinstance(t, numbers.Integral) or float(t).is_integer():
            return str(int(t))
        if 1e9 <= float(t) < 1e11:
            # Epoch seconds with a fraction (time.time(), datetime's
            # timestamp()), not milliseconds: read as milliseconds they are
            # a day of January 1970 and the answer the whole series. Sent
            # as whole seconds, the API refuses them as it refuses an int
            # of seconds, saying what to send (api.parseTimeParam).
            return str(int(t))
        # A fraction of a millisecond (ns / 1e6 of a frame's time) is kept,
        # to the microsecond, the API's precision: cut, a walk resumed at
        # a snapshot's time plus 1 µs would answer that snapshot again.
        sec, us = divmod(round(float(t) * 1000), 1_000_000)
        return datetime.fromtimestamp(sec, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{us:06d}Z"
    if isinstance(t, str):
        return t
    if isinstance(t, datetime):  # pandas.Timestamp is one too
        if t.tzinfo is None:
            t = t.replace(tzinfo=timezone.utc)
        return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(t, date):
        return t.isoformat()
    if type(t).__name__ == "datetime64":  # numpy's, e.g. df.start_time.values[0]
        return _numpy_time(t)
    raise TypeError(f"cannot use {type(t).__name__} as a time: give a datetime, ISO 8601 string or epoch milliseconds")


def _numpy_time(t: Any) -> str:
    """A numpy datetime64 as the API takes it, with what it holds below
    the millisecond: epoch milliseconds when it is a whole millisecond,
    else RFC 3339 with six (nine for nanosecond times) fractional digits,
    which the API rounds up to its microseconds. Cut to the millisecond, a
    frame's snapshot time plus 1 µs as start (where a walk resumes) would
    answer that snapshot again."""
    import numpy as np  # t is numpy's

    if np.isnat(t):
        raise ValueError("a time cannot be NaT")
    digits = 9 if np.datetime_data(t.dtype)[0] in ("ns", "ps", "fs", "as") else 6  # microseconds reach year 9999
    v = int(t.astype(f"datetime64[{'ns' if digits == 9 else 'us'}]").astype("int64"))
    per_ms = 10 ** (digits - 3)
    if v % per_ms == 0:
        return str(v // per_ms)
    sec, frac = divmod(v, 10 ** digits)
    return datetime.fromtimestamp(sec, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:0{digits}d}Z"


def _json_value(o: Any) -> Any:
    """A body's value that json cannot write as it is: numpy's numbers and
    arrays (a trials_frame() cell, np.arange(...) as a sweep's values), and
    pandas' lists, as the Python numbers and lists they hold."""
    kind = getattr(getattr(o, "dtype", None), "kind", "")
    if type(o).__module__.split(".")[0] in ("numpy", "pandas") and hasattr(o, "tolist") and kind != "" and kind in "biufUSO":
        return o.tolist()  # not times (kind M, m): numpy's tolist() gives nanoseconds as an int
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _clean(params: Dict[str, Any]) -> Dict[str, str]:
    out = {}
    for k, v in params.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        out[k] = str(v)
    return out


class Client:
    """A client of one updown server.

    Retries follow SPEC 7: 429 and 5xx (and unreachable servers) are retried
    with exponential backoff and full jitter, waiting at least what
    Retry-After says; 400, 401, 403 and other 4xx never are. A request
    that starts something (a sweep) or spends the monthly AI quota is not
    sent again after a connection lost once it was sent, when the server may
    have acted on it: that is a ConnectionError saying so, for the caller
    to check (sweeps(), the quota) before sending it again; nor after a
    5xx a proxy in front of the server answered (no error code), raised as
    a ServerError saying so. A 504
    JOB_TIMEOUT is followed by polling GET /v1/jobs/{id} until the job
    answers or job_wait seconds pass. timeout bounds one request; keep it
    above the server's JOB_WAIT (60 s by default), so that a slow job's 504
    arrives, rather than a timeout that would send the request again.
    """

    def __init__(
        self,
        base_url: str = "http://localhost:8080",
        api_key: Optional[str] = None,
        *,
        timeout: float = 90.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        max_retry_after: float = 60.0,
        job_wait: float = 600.0,
        job_poll: float = 1.0,
        user_agent: str = "updown-python/" + VERSION,
        sleep: Callable[[float], None] = _time.sleep,
    ) -> None:
        if api_key is None:
            raise ValueError("api_key is required (send your key from the dashboard, or ud_dev_pro on `updown dev`)")
        parts = urllib.parse.urlsplit(base_url or "")
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            # Taken as it was, every request failed as a lost connection
            # and was retried for seconds ("unknown url type").
            raise ValueError(f"base_url must be an http:// or https:// URL, such as http://localhost:8080; got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.job_wait = job_wait
        self.job_poll = job_poll
        self.user_agent = user_agent
        self._sleep = sleep
        self._token: Optional[Tuple[str, float]] = None  # bearer token and when to renew it
        self.agent = Agent(self)

    # ---- transport -------------------------------------------------------

    def _url(self, path: str, params: Optional[Dict[str, Any]] = None) -> str:
        url = self.base_url + path
        if params:
            q = _clean(params)
            if q:
                url += "?" + urllib.parse.urlencode(q)
        return url

    def _delay(self, attempt: int, retry_after: Optional[float]) -> float:
        d = random.uniform(0, min(self.max_backoff, self.backoff * (2 ** attempt)))
        if retry_after is not None:
            d = max(d, retry_after)
        return d

    def _send(self, method: str, path: str, params=None, body=None, headers=None,
              once: bool = False) -> Tuple[int, Dict[str, str], bytes]:
        """One request, with retries; returns status, headers, body of a
        2xx answer, raises the matching UpdownError otherwise. once marks a
        request the server must not act on twice: after a connection lost
        while it waited for the answer, it is not sent again."""
        url = self._url(path, params)
        data = json.dumps(body, default=_json_value).encode() if body is not None else None
        # gzip: the API compresses its answers, a page of snapshots with
        # books to about a fifth, when asked (urllib does not ask).
        h = {"Accept": "application/json", "Accept-Encoding": "gzip", "User-Agent": self.user_agent}
        if data is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        attempt = 0
        while True:
            req = urllib.request.Request(url, data=data, method=method, headers=h)
            try:
                with _opener.open(req, timeout=self.timeout) as res:
                    hdrs = {k.lower(): v for k, v in res.headers.items()}
                    answer = res.status, hdrs, _decoded(hdrs, res.read())
                if answer[1].get("content-type", "").startswith("text/html"):
                    # The API answers no page: a dashboard or docs address
                    # (base_url ending in /app/), or a portal or proxy in front.
                    raise self._not_api(method, path, *answer)
                return answer
            except urllib.error.HTTPError as e:
                status, hdrs = e.code, {k.lower(): v for k, v in e.headers.items()}
                try:
                    raw = e.read()
                except http.client.IncompleteRead as cut:
                    raw = cut.partial  # the body cut short: its status still says what to do
                except (OSError, http.client.HTTPException):
                    raw = b""  # an exception raised here would escape the retries below
                raw = _decoded(hdrs, raw, partial=True)
                if 300 <= status < 400:
                    raise errors.UpdownError(
                        f"{method} {path}: the server at {self.base_url} redirected to {hdrs.get('location')!r} (HTTP {status}); "
                        "not followed, so that your API key goes nowhere else: set base_url to the API's own address",
                        status=status, request_id=hdrs.get("x-request-id")) from e
                err = self._error(status, hdrs, raw)
                if once and status >= 500 and not err.code:
                    # A 5xx that is not the API's own answer (no error code)
                    # comes from a proxy in front of it, e.g. its 504 when a
                    # generation outlasts the proxy's wait: the API may have
                    # acted on the request, as after a lost connection.
                    raise type(err)(
                        f"{method} {path}: HTTP {status} from in front of the server at {self.base_url}, not its own "
                        f"answer ({err.message[:200]}); the server may have acted on it, so it was not sent again: "
                        "check before sending it again",
                        status=status, request_id=err.request_id, retry_after=err.retry_after) from e
            except urllib.error.URLError as e:
                # urllib raises URLError while it connects and sends: the
                # server has not had the whole request.
                err = errors.ConnectionError(f"cannot reach {self.base_url}: {e.reason}")
            except (socket.timeout, ConnectionError, OSError, http.client.HTTPException) as e:
                # Lost while waiting for the answer: the request was sent.
                if once:
                    raise errors.ConnectionError(
                        f"lost the connection to {self.base_url} after sending {method} {path} ({e}); the server may "
                        "have acted on it, so it was not sent again: check before sending it again") from e
                err = errors.ConnectionError(f"cannot reach {self.base_url}: {e}")
            # A sweep refused while another runs waits for minutes, not for
            # a rate limit's window: the caller decides (wait, or cancel).
            busy = err.status == 429 and (err.details or {}).get("limit") == "concurrent_sweeps"
            # An agent request whose generation is spent (its error holds
            # the strategy, details.generated_strategy) is not sent again:
            # that would spend another generation of the month.
            spent = "generated_strategy" in (err.details or {})
            retriable = not spent and (isinstance(err, errors.ConnectionError) or (err.status == 429 and not busy) or err.status >= 500)
            if isinstance(err, errors.JobTimeoutError) and err.job_id:
                return self._await_job(err)
            if not retriable or attempt >= self.max_retries:
                raise err
            retry_after = err.retry_after
            if retry_after is not None and retry_after > self.max_retry_after:
                raise err  # e.g. a daily limit: waiting hours is the caller's call
            self._sleep(self._delay(attempt, retry_after))
            attempt += 1

    def _not_api(self, method: str, path: str, status: int, headers: Dict[str, str], raw: bytes) -> errors.UpdownError:
        """The error of a 2xx answer that is not the API's (a page, text)."""
        what = headers.get("content-type") or "no content type"
        return errors.UpdownError(
            f"{method} {path}: HTTP {status} ({what}) from {self.base_url} is not the API's answer "
            f"({raw[:80].decode('utf-8', 'replace')!r}): is base_url the API's own address, such as "
            "http://localhost:8080, without /app/ or /docs?", status=status, request_id=headers.get("x-request-id"))

    def _json(self, method: str, path: str, answer: Tuple[int, Dict[str, str], bytes]) -> Any:
        """The JSON of a 2xx answer, or an error saying it is not the API's."""
        try:
            return json.loads(answer[2])
        except ValueError:
            raise self._not_api(method, path, *answer) from None

    def _error(self, status: int, headers: Dict[str, str], raw: bytes) -> errors.UpdownError:
        code, message, details = "", raw.decode("utf-8", "replace")[:500] or f"HTTP {status}", {}
        try:
            e = json.loads(raw).get("error") or {}
            code, message, details = e.get("code", ""), e.get("message", message), e.get("details") or {}
        except (ValueError, AttributeError):
            pass
        cls = errors.error_class(status, code)
        return cls(message, code=code, status=status, details=details, request_id=headers.get("x-request-id"),
                   retry_after=_retry_after(headers.get("retry-after")))

    def _await_job(self, err: errors.JobTimeoutError) -> Tuple[int, Dict[str, str], bytes]:
        """Polls GET /v1/jobs/{id} after a 504 JOB_TIMEOUT until it answers."""
        deadline = _time.monotonic() + self.job_wait
        while True:
            status, headers, raw = self._send("GET", f"/v1/jobs/{urllib.parse.quote(err.job_id, safe='')}",
                                              headers={"X-API-Key": self.api_key})
            if status != 202:
                return status, headers, raw
            if _time.monotonic() >= deadline:
                raise err
            self._sleep(self.job_poll)

    def _get(self, path: str, params=None) -> Any:
        return self._json("GET", path, self._send("GET", path, params, headers={"X-API-Key": self.api_key}))

    def _rows(self, path: str, accept: str, params=None) -> Union[ParquetPage, CSVPage]:
        """A page of rows as Parquet or CSV (accept), with its paging headers."""
        return self._rows_page(path, accept, self._send("GET", path, params,
                                                        headers={"X-API-Key": self.api_key, "Accept": accept}))

    def _rows_page(self, path: str, accept: str, answer: Tuple[int, Dict[str, str], bytes]) -> Union[ParquetPage, CSVPage]:
        """An answer of a page of rows: a ParquetPage or a CSVPage, each with
        the page's fields its headers carry (X-Next-Cursor, ...). An answer
        of another type (JSON from a server without that form of the route,
        a proxy's text) is not the page asked for and raises: returned, its
        bytes passed for a Parquet file, and a walk ended after it, as the
        answer has no X-Next-Cursor."""
        ctype = answer[1].get("content-type", "").split(";")[0].strip().lower()
        if ctype != accept:
            raise self._not_api("GET", path, *answer)
        if accept != CSV:
            return ParquetPage.from_answer(answer[2], answer[1])
        return CSVPage.from_answer(answer[2].decode("utf-8"), answer[1])

    def _post(self, path: str, body: Any, headers: Optional[Dict[str, str]] = None, once: bool = False) -> Any:
        h = {"X-API-Key": self.api_key}
        h.update(headers or {})
        return self._json("POST", path, self._send("POST", path, body=body, headers=h, once=once))

    # ---- markets ---------------------------------------------------------

    def markets(self, coin: str, *, market_type: Optional[str] = None, resolved: Optional[bool] = None,
                start: TimeLike = None, end: TimeLike = None, limit: int = 100, offset: int = 0) -> MarketPage:
        """One page of markets of a coin, newest start first (start/end
        bound the start time)."""
        d = self._get("/v1/markets", {"coin": coin, "market_type": market_type, "resolved": resolved,
                                       "start_time": _time_param(start), "end_time": _time_param(end),
                                       "limit": limit, "offset": offset})
        return MarketPage(markets=records(MarketList, map(Market.from_json, d["markets"])), total=d["total"],
                          limit=d["limit"], offset=d["offset"], warning=d.get("warning"))

    def iter_markets(self, coin: str, *, limit: Optional[int] = None, offset: int = 0,
                     **filters: Any) -> Iterator[Market]:
        """Every market matching the filters (markets()' market_type,
        resolved, start, end), newest start first, each once: from the
        offset-th on, and at most limit of them (None: all). The list pages
        by offset: a market listed meanwhile (the collector lists each
        series' next market) pushes the last of a page onto the next one,
        where it is passed over. A walk that runs out of markets before
        its limit where the plan's window hid older ones warns once with
        DataWindowWarning; one that has its limit was not cut (the list is
        newest first, the window hides the oldest) and does not."""
        if limit is not None and (isinstance(limit, bool) or limit < 1):
            raise ValueError(f"limit is the most markets to read, at least 1 (None: all); got {limit!r}")

        def page(offset: int, size: int) -> Tuple[List[Market], int, Optional[str]]:
            p = self.markets(coin, limit=size, offset=offset, **filters)
            return p.markets, p.total, p.warning
        yield from _offset_walk(page, lambda m: m.slug, offset=offset, limit=limit, page_size=100)

    def all_markets(self, coin: str, *, limit: Optional[int] = None, offset: int = 0, **filters: Any) -> MarketList:
        """iter_markets as one list (to_frame() for a DataFrame): every
        matching market, or the newest limit of them."""
        return records(MarketList, self.iter_markets(coin, limit=limit, offset=offset, **filters))

    def market(self, slug: str) -> Market:
        return Market.from_json(self._get(f"/v1/markets/{_seg(slug)}"))

    # ---- snapshots -------------------------------------------------------

    def snapshots(self, slug: Optional[str] = None, *, market_id: Optional[str] = None, start: TimeLike = None,
                  end: TimeLike = None, order: str = "desc", limit: int = 1000, offset: int = 0,
                  cursor: Optional[str] = None, include_orderbook: bool = False) -> SnapshotPage:
        """One page of a market's snapshots (by slug or external market id):
        start inclusive, end exclusive; pass a page's next_cursor as cursor
        for the next."""
        d = self._get(_snapshots_path(slug, market_id),
                      _series_params(start, end, order, limit, offset, cursor, include_orderbook=include_orderbook))
        return SnapshotPage(market=Market.from_json(d["market"]),
                            snapshots=records(snapshot_list(include_orderbook), (Snapshot.from_json(s) for s in d["snapshots"])),
                            total=d["total"], matched=d.get("matched", d["total"]), limit=d["limit"],
                            offset=d["offset"], next_cursor=d.get("next_cursor"))

    def iter_snapshots(self, slug: Optional[str] = None, *, market_id: Optional[str] = None, start: TimeLike = None,
                       end: TimeLike = None, order: str = "asc", include_orderbook: bool = False,
                       page_size: int = 1000, tag_slug: bool = False) -> Iterator[Snapshot]:
        """Every snapshot of the market in [start, end), oldest first by
        default, following next_cursor: snapshots that arrive meanwhile
        never shift the walk."""
        cursor = None
        while True:
            page = self.snapshots(slug, market_id=market_id, start=start, end=end, order=order, limit=page_size,
                                  cursor=cursor, include_orderbook=include_orderbook)
            for s in page.snapshots:
                if tag_slug:
                    s.slug = page.market.slug
                yield s
            cursor = page.next_cursor
            if cursor is None:
                return

    def all_snapshots(self, slug: Optional[str] = None, **kw: Any) -> SnapshotList:
        """iter_snapshots as one list (to_frame() for a DataFrame)."""
        return records(snapshot_list(kw.get("include_orderbook", False), kw.get("tag_slug", False)),
                       self.iter_snapshots(slug, **kw))

    def snapshots_frame(self, slug: Optional[str] = None, **kw: Any):
        """Any time range of a market as a DataFrame, in one call."""
        return self.all_snapshots(slug, **kw).to_frame()

    def snapshots_parquet(self, slug: Optional[str] = None, *, market_id: Optional[str] = None, start: TimeLike = None,
                          end: TimeLike = None, order: str = "asc", limit: int = 1000, offset: int = 0,
                          cursor: Optional[str] = None, include_orderbook: bool = False) -> ParquetPage:
        """One page of snapshots as a Parquet file's bytes (a ParquetPage:
        its next_cursor, total and matched attributes are the JSON page's)."""
        return self._rows(_snapshots_path(slug, market_id), PARQUET,
                          _series_params(start, end, order, limit, offset, cursor, include_orderbook=include_orderbook))

    def iter_snapshots_parquet(self, slug: Optional[str] = None, *, market_id: Optional[str] = None,
                               start: TimeLike = None, end: TimeLike = None, order: str = "asc", limit: int = 1000,
                               include_orderbook: bool = False) -> Iterator[ParquetPage]:
        """Every page of a market's snapshots (start inclusive, end
        exclusive) as one Parquet file's bytes each, following each page's
        X-Next-Cursor header: new snapshots cannot shift the walk."""
        return self._parquet_pages(_snapshots_path(slug, market_id), start, end, order, limit,
                                   include_orderbook=include_orderbook)

    def snapshots_csv(self, slug: Optional[str] = None, *, market_id: Optional[str] = None, start: TimeLike = None,
                      end: TimeLike = None, order: str = "asc", limit: int = 1000, offset: int = 0,
                      cursor: Optional[str] = None, include_orderbook: bool = False) -> CSVPage:
        """One page of a market's snapshots as CSV text, its header row
        first (slug, time, coin_price, price_up, price_down, orderbook_up,
        orderbook_down; a book as "bids|asks", price:size levels parted by
        spaces, as `updown export --format csv` writes it); a CSVPage, its
        next_cursor, total and matched attributes the JSON page's."""
        return self._rows(_snapshots_path(slug, market_id), CSV,
                          _series_params(start, end, order, limit, offset, cursor, include_orderbook=include_orderbook))

    def iter_snapshots_csv(self, slug: Optional[str] = None, *, market_id: Optional[str] = None,
                           start: TimeLike = None, end: TimeLike = None, order: str = "asc", limit: int = 1000,
                           include_orderbook: bool = False) -> Iterator[CSVPage]:
        """Every page of a market's snapshots (start inclusive, end
        exclusive) as CSV text each, its header row first, following each
        page's X-Next-Cursor: new snapshots cannot shift the walk."""
        return self._csv_pages(_snapshots_path(slug, market_id), start, end, order, limit,
                               include_orderbook=include_orderbook)

    def _parquet_pages(self, path: str, start: TimeLike, end: TimeLike, order: str, limit: int,
                       **extra: Any) -> Iterator[ParquetPage]:
        """Every page of a list by cursor as a Parquet file's bytes each,
        following the X-Next-Cursor header (the JSON page's next_cursor),
        and warning once with DataWindowWarning for an X-Warning (its
        warning: the plan's window cut the range)."""
        return self._row_pages(path, PARQUET, start, end, order, limit, **extra)

    def _csv_pages(self, path: str, start: TimeLike, end: TimeLike, order: str, limit: int,
                   **extra: Any) -> Iterator[CSVPage]:
        """Every page of a list by cursor as a CSV document each (its header
        row first), as _parquet_pages walks them."""
        return self._row_pages(path, CSV, start, end, order, limit, **extra)

    def _row_pages(self, path: str, accept: str, start: TimeLike, end: TimeLike, order: str, limit: int,
                   **extra: Any) -> Iterator[Any]:
        """Every page of a list by cursor in the accept form, as _rows
        answers it, following X-Next-Cursor and warning once for an
        X-Warning."""
        params = lambda cursor: _series_params(start, end, order, limit, 0, cursor, **extra)  # noqa: E731
        params(None)  # a bad order or time is raised here, not at the first next()
        cut = _WindowNotice()

        def pages() -> Iterator[Any]:
            cursor: Optional[str] = None
            while True:
                page = self._rows(path, accept, params(cursor))
                cut.page(page.warning)
                yield page
                cursor = page.next_cursor
                if not cursor:
                    return
        return pages()

    def series(self, coin: str, market_type: str, start: TimeLike, end: TimeLike, *,
               include_orderbook: bool = False) -> SnapshotList:
        """The snapshots of every market of a series (coin and type) that
        starts in [start, end), oldest market first, each tagged with its
        slug: a day of BTC 15m markets in one call."""
        out = snapshot_list(include_orderbook, tagged=True)()
        ms = self.all_markets(coin, market_type=market_type, start=_just_before(start), end=end)
        for m in sorted(ms, key=lambda m: m.start_time):
            out.extend(self.iter_snapshots(m.slug, include_orderbook=include_orderbook, tag_slug=True))
        return out

    def chart(self, slug: str, points: Optional[int] = None) -> Chart:
        """A market's price_up, price_down and coin_price over its whole
        window in one request, downsampled to at most points buckets (100
        to 5,000; the server's 2,000 when None), each bucket's first, min
        and max kept (GET /v1/markets/{slug}/series); to_frame() for a
        DataFrame."""
        return Chart.from_json(self._get(f"/v1/markets/{_seg(slug)}/series", {"points": points})["data"])

    # ---- market trades ----------------------------------------------------

    def market_trades_page(self, slug: Optional[str] = None, *, market_id: Optional[str] = None,
                           start: TimeLike = None, end: TimeLike = None, order: str = "desc", limit: int = 1000,
                           offset: int = 0, cursor: Optional[str] = None) -> MarketTradePage:
        """One page of a market's trades on Polymarket (by slug or external
        market id): start inclusive, end exclusive, newest first
        (order="asc": oldest first); pass a page's next_cursor as cursor for
        the next."""
        d = self._get(_market_path(slug, market_id, "trades"), _series_params(start, end, order, limit, offset, cursor))
        return MarketTradePage(market=Market.from_json(d["market"]),
                               trades=records(MarketTradeList, map(MarketTrade.from_json, d.get("trades") or [])),
                               total=d["total"], matched=d.get("matched", d["total"]), limit=d["limit"],
                               offset=d["offset"], next_cursor=d.get("next_cursor"))

    def market_trades_parquet(self, slug: Optional[str] = None, *, market_id: Optional[str] = None,
                              start: TimeLike = None, end: TimeLike = None, order: str = "asc", limit: int = 1000,
                              offset: int = 0, cursor: Optional[str] = None) -> ParquetPage:
        """One page of a market's trades as a Parquet file's bytes (columns
        slug, time, outcome, side, price, size, fee_rate_bps, tx_hash); a
        ParquetPage, its next_cursor, total and matched attributes the JSON
        page's."""
        return self._rows(_market_path(slug, market_id, "trades"), PARQUET,
                          _series_params(start, end, order, limit, offset, cursor))

    def iter_market_trades_parquet(self, slug: Optional[str] = None, *, market_id: Optional[str] = None,
                                   start: TimeLike = None, end: TimeLike = None, order: str = "asc",
                                   limit: int = 1000) -> Iterator[ParquetPage]:
        """Every page of a market's trades in [start, end) as one Parquet
        file's bytes each, following each page's X-Next-Cursor."""
        return self._parquet_pages(_market_path(slug, market_id, "trades"), start, end, order, limit)

    def market_trades_csv(self, slug: Optional[str] = None, *, market_id: Optional[str] = None,
                          start: TimeLike = None, end: TimeLike = None, order: str = "asc", limit: int = 1000,
                          offset: int = 0, cursor: Optional[str] = None) -> CSVPage:
        """One page of a market's trades as CSV text, its header row first
        (slug, time, outcome, price, size, side, fee_rate_bps, tx_hash); a
        CSVPage, its next_cursor, total and matched attributes the JSON
        page's."""
        return self._rows(_market_path(slug, market_id, "trades"), CSV,
                          _series_params(start, end, order, limit, offset, cursor))

    def iter_market_trades_csv(self, slug: Optional[str] = None, *, market_id: Optional[str] = None,
                               start: TimeLike = None, end: TimeLike = None, order: str = "asc",
                               limit: int = 1000) -> Iterator[CSVPage]:
        """Every page of a market's trades in [start, end) as CSV text
        each, its header row first, following each page's X-Next-Cursor."""
        return self._csv_pages(_market_path(slug, market_id, "trades"), start, end, order, limit)

    def market_trades(self, slug: Optional[str] = None, *, market_id: Optional[str] = None, start: TimeLike = None,
                      end: TimeLike = None, order: str = "desc", limit: int = 1000, offset: int = 0,
                      cursor: Optional[str] = None) -> MarketTradeList:
        """One page of a market's trades (by slug or external market id), as
        a list."""
        return self.market_trades_page(slug, market_id=market_id, start=start, end=end, order=order, limit=limit,
                                       offset=offset, cursor=cursor).trades

    def iter_market_trades(self, slug: Optional[str] = None, *, market_id: Optional[str] = None,
                           start: TimeLike = None, end: TimeLike = None, order: str = "asc",
                           page_size: int = 1000) -> Iterator[MarketTrade]:
        """Every trade of the market in [start, end), oldest first by
        default, following next_cursor: trades that arrive meanwhile never
        shift the walk, and trades sharing an instant are each read once."""
        cursor = None
        while True:
            page = self.market_trades_page(slug, market_id=market_id, start=start, end=end, order=order,
                                           limit=page_size, cursor=cursor)
            yield from page.trades
            cursor = page.next_cursor
            if cursor is None:
                return

    def all_market_trades(self, slug: Optional[str] = None, **kw: Any) -> MarketTradeList:
        """iter_market_trades as one list (to_frame() for a DataFrame)."""
        return records(MarketTradeList, self.iter_market_trades(slug, **kw))

    # ---- exchange ----------------------------------------------------------

    def depth(self, kind: str = "spot", *, start: TimeLike = None, end: TimeLike = None, order: str = "desc",
              limit: int = 100, offset: int = 0, cursor: Optional[str] = None) -> DepthPage:
        """One page of BTCUSDT depth history (kind spot or future); start
        and end are inclusive, as SPEC has them."""
        d = self._get(f"/v1/btc/{_kind(kind)}/snapshots", _series_params(start, end, order, limit, offset, cursor))
        return DepthPage(data=records(DepthList, map(DepthSnapshot.from_json, d["data"])), total=d["total"],
                         limit=d["limit"], offset=d["offset"], next_cursor=d.get("next_cursor"),
                         warning=d.get("warning"))

    def iter_depth(self, kind: str = "spot", *, start: TimeLike = None, end: TimeLike = None, order: str = "asc",
                   page_size: int = 1000) -> Iterator[DepthSnapshot]:
        cursor = None
        cut = _WindowNotice()
        while True:
            page = self.depth(kind, start=start, end=end, order=order, limit=page_size, cursor=cursor)
            cut.page(page.warning)
            yield from page.data
            cursor = page.next_cursor
            if cursor is None:
                return

    def depth_parquet(self, kind: str = "spot", *, start: TimeLike = None, end: TimeLike = None, order: str = "asc",
                      limit: int = 1000, offset: int = 0, cursor: Optional[str] = None) -> ParquetPage:
        """One page of BTCUSDT depth history as a Parquet file's bytes
        (start and end inclusive); a ParquetPage, its next_cursor, total
        and warning attributes the JSON page's."""
        return self._rows(f"/v1/btc/{_kind(kind)}/snapshots", PARQUET,
                          _series_params(start, end, order, limit, offset, cursor))

    def iter_depth_parquet(self, kind: str = "spot", *, start: TimeLike = None, end: TimeLike = None,
                           order: str = "asc", limit: int = 1000) -> Iterator[ParquetPage]:
        """Every page of BTCUSDT depth history as one Parquet file's bytes
        each, following each page's X-Next-Cursor; a range the plan's
        window cut warns once with DataWindowWarning, as iter_depth does."""
        return self._parquet_pages(f"/v1/btc/{_kind(kind)}/snapshots", start, end, order, limit)

    def depth_csv(self, kind: str = "spot", *, start: TimeLike = None, end: TimeLike = None, order: str = "asc",
                  limit: int = 1000, offset: int = 0, cursor: Optional[str] = None) -> CSVPage:
        """One page of BTCUSDT depth history as CSV text, its header row
        first (symbol, time_epoch_ms, coin_price, bids, asks,
        last_update_id; bids and asks as JSON arrays of {price, quantity});
        start and end inclusive. A CSVPage, its next_cursor, total and
        warning attributes the JSON page's."""
        return self._rows(f"/v1/btc/{_kind(kind)}/snapshots", CSV, _series_params(start, end, order, limit, offset, cursor))

    def iter_depth_csv(self, kind: str = "spot", *, start: TimeLike = None, end: TimeLike = None,
                       order: str = "asc", limit: int = 1000) -> Iterator[CSVPage]:
        """Every page of BTCUSDT depth history as CSV text each, its header
        row first, following each page's X-Next-Cursor; a range the plan's
        window cut warns once with DataWindowWarning, as iter_depth does."""
        return self._csv_pages(f"/v1/btc/{_kind(kind)}/snapshots", start, end, order, limit)

    def latest_depth(self, coin: str = "btc", kind: str = "spot") -> LatestDepth:
        """The latest depth, with time, when the collector took it (the
        answer's Last-Modified): the depth of a collector that stopped
        hearing from Binance is still served, as old as time says."""
        path = f"/v1/{_seg(coin.lower())}/{_kind(kind)}/latest"
        answer = self._send("GET", path, headers={"X-API-Key": self.api_key})
        d = self._json("GET", path, answer)["data"]
        return LatestDepth(coin_price=d["coin_price"], bids=[DepthLevel(l["price"], l["quantity"]) for l in d["bids"]],
                           asks=[DepthLevel(l["price"], l["quantity"]) for l in d["asks"]],
                           time=_http_time(answer[1].get("last-modified")))

    def trades(self, coin: str = "btc", kind: str = "spot", *, limit: int = 100) -> TradeList:
        """Recent exchange trades, newest first."""
        d = self._get(f"/v1/{_seg(coin.lower())}/{_kind(kind)}/trades", {"limit": limit})
        return records(TradeList, map(Trade.from_json, d["data"]))

    def latest_trade(self, coin: str = "btc", kind: str = "spot") -> Trade:
        return Trade.from_json(self._get(f"/v1/{_seg(coin.lower())}/{_kind(kind)}/trade/latest")["data"])

    # ---- replay, account, jobs ------------------------------------------

    def replay(self, market_slug: str, side: str, entry_conditions: Sequence[Dict[str, Any]],
               exit_conditions: Sequence[Dict[str, Any]], position_size: float, *,
               max_loss_percent: Optional[float] = None, order_type: Optional[str] = None,
               fee_model: Optional[str] = None, fee_rate: Optional[float] = None,
               fee_exponent: Optional[int] = None, latency_ms: Optional[int] = None,
               reentry_cooldown_ms: Optional[int] = None, max_entries_per_market: Optional[int] = None,
               post_only: Optional[bool] = None, limit_offset_ticks: Optional[int] = None,
               cancel_after_ms: Optional[int] = None, queue_model: Optional[str] = None,
               include_rebates: Optional[bool] = None, trades_offset: Optional[int] = None,
               trades_limit: Optional[int] = None, all_trades: bool = False) -> ReplayResult:
        """Replays a strategy on a resolved market (SPEC 4.2, DESIGN 6).
        Conditions are {"field", "operator", "value"}. Every optional
        keyword is the replay body's field of the same name in camelCase:
        costs (fee_model NONE/MARKET/CUSTOM, fee_rate, fee_exponent,
        latency_ms), re-entry control (reentry_cooldown_ms,
        max_entries_per_market), with order_type="GTC", resting orders
        (post_only, limit_offset_ticks, cancel_after_ms, queue_model
        RISK_AVERSE/FRONT, include_rebates), and a page of the trade events
        (trades_offset, trades_limit up to 1,000). None leaves a field out.

        An answer lists at most 1,000 trade events (the first and the last
        500, trades_truncated set); all_trades=True pages through them all
        (the replay is deterministic, so the pages fit together) and
        returns every event in trades. Each page is a replay of its own,
        counted against the rate limits."""
        body: Dict[str, Any] = {"marketSlug": market_slug, "side": side, "entryConditions": list(entry_conditions),
                                "exitConditions": list(exit_conditions), "positionSize": position_size}
        for key, value in (("maxLossPercent", max_loss_percent), ("orderType", order_type),
                           ("feeModel", fee_model), ("feeRate", fee_rate), ("feeExponent", fee_exponent),
                           ("latencyMs", latency_ms), ("reentryCooldownMs", reentry_cooldown_ms),
                           ("maxEntriesPerMarket", max_entries_per_market), ("postOnly", post_only),
                           ("limitOffsetTicks", limit_offset_ticks), ("cancelAfterMs", cancel_after_ms),
                           ("queueModel", queue_model), ("includeRebates", include_rebates),
                           ("tradesOffset", trades_offset), ("tradesLimit", trades_limit)):
            if value is not None:
                body[key] = value
        paging = all_trades and trades_offset is None and trades_limit is None
        if paging:
            # The first page is the answer: its performance counts every event.
            body.update(tradesOffset=0, tradesLimit=1000)
        r = ReplayResult.from_json(self._post("/v1/replay", body)["data"])
        total = r.performance.get("trade_events")
        if not paging or not r.trades_truncated or not isinstance(total, int):
            return r
        trades = list(r.trades)
        while len(trades) < total:
            page = self._post("/v1/replay", dict(body, tradesOffset=len(trades)))["data"]
            got = timed_rows(page.get("trades"))
            if not got:
                break
            trades.extend(got)
        r.trades, r.trades_truncated = trades, len(trades) < total
        return r

    # ---- sweeps ------------------------------------------------------------

    def sweep(self, strategy: Dict[str, Any], parameters: Sequence[Dict[str, Any]], markets: Dict[str, Any], *,
              search: Optional[Dict[str, Any]] = None, split: Optional[Dict[str, Any]] = None,
              objective: Optional[str] = None, wait: bool = True, timeout: float = 600.0, poll: float = 1.0,
              progress: Optional[Callable[[Sweep], None]] = None) -> Sweep:
        """Starts a parameter sweep (DESIGN 14) and, with wait, follows it
        until it ends, calling progress with each state seen: it returns
        the DONE sweep, and raises SweepError (its sweep attribute the
        sweep, its message the reason) for one that ended FAILED or
        CANCELLED, which has no results, and JobTimeoutError for one still
        running after timeout seconds (its sweep_id: wait_sweep() waits
        on). strategy is a
        replay body without marketSlug; parameters 1 to 4 of {"path",
        "values"} or {"path", "range": {"from", "to", "step"}} (JSON
        Pointers into strategy); markets {"coin", "market_type", "count"};
        search {"kind": "GRID"} (the default) or {"kind": "RANDOM",
        "trials", "seed"}; split {"kind": "NONE" | "HOLDOUT" |
        "WALK_FORWARD", ...}. markets' start_time and end_time may be
        datetimes (naive ones are UTC), dates (midnight UTC), RFC 3339
        strings or epoch milliseconds."""
        body: Dict[str, Any] = {"strategy": strategy, "parameters": list(parameters), "markets": _sweep_markets(markets),
                                "search": search or {"kind": "GRID"}}
        if split is not None:
            body["split"] = split
        if objective is not None:
            body["objective"] = objective
        s = Sweep.from_json(self._post("/v1/sweeps", body, once=True)["data"])
        if not wait:
            return s
        return self.wait_sweep(s.sweep_id, timeout=timeout, poll=poll, progress=progress)

    def wait_sweep(self, sweep_id: str, *, timeout: float = 600.0, poll: float = 1.0,
                   progress: Optional[Callable[[Sweep], None]] = None) -> Sweep:
        """Follows a sweep until it ends, as sweep() does with wait: the
        DONE sweep, or SweepError for one that ended FAILED or CANCELLED.
        A sweep still running after timeout seconds raises JobTimeoutError
        whose sweep_id (and message) names it: the sweep goes on, and
        wait_sweep(e.sweep_id) waits on."""
        deadline = _time.monotonic() + timeout
        while True:
            s = self.get_sweep(sweep_id)
            if progress is not None:
                progress(s)
            if s.done:
                if s.status != "DONE":
                    # FAILED or CANCELLED: no results, and an empty
                    # trials_frame() would pass for a sweep that found nothing.
                    why = f": {s.error}" if s.error else " (cancelled by DELETE /v1/sweeps/{id}, or by a change of plan)"
                    raise errors.SweepError(f"sweep {s.sweep_id} ended {s.status} after {s.progress.get('replays_done', 0)} "
                                            f"of {s.replays} replays{why}", sweep=s,
                                            details={"sweep_id": s.sweep_id, "status": s.status, "error": s.error})
                return s
            if _time.monotonic() > deadline:
                raise errors.JobTimeoutError(
                    f"sweep {s.sweep_id} still {s.status} after {timeout} s ({s.progress.get('replays_done', 0)} of "
                    f"{s.replays} replays); it goes on: wait_sweep({s.sweep_id!r}) waits on, get_sweep() reads it, "
                    "cancel_sweep() stops it", code="JOB_TIMEOUT", status=504,
                    details={"sweep_id": s.sweep_id, "status": s.status})
            self._sleep(poll)

    def sweeps(self, limit: int = 20, offset: int = 0) -> List[Sweep]:
        """The caller's sweeps, newest first, a page at a time (GET /v1/sweeps;
        limit 1 to 100): iter_sweeps() walks every page."""
        d = self._get("/v1/sweeps", {"limit": limit, "offset": offset})["data"]
        return [Sweep.from_json(x) for x in d.get("sweeps") or []]

    def iter_sweeps(self, *, page_size: int = 100) -> Iterator[Sweep]:
        """Every sweep of the caller, newest first, each once, a page of
        page_size (1 to 100) at a time: a sweep started meanwhile pushes
        the last of a page onto the next one, where it is passed over. As
        sweeps() lists them, without request or results: get_sweep() reads
        those."""
        def page(offset: int, size: int) -> Tuple[List[Sweep], int, Optional[str]]:
            d = self._get("/v1/sweeps", {"limit": size, "offset": offset})["data"]
            return [Sweep.from_json(x) for x in d.get("sweeps") or []], d.get("total", 0), None
        return _offset_walk(page, lambda s: s.sweep_id, page_size=page_size)

    def gaps(self, slug: Optional[str] = None, *, market_id: Optional[str] = None) -> List[Dict[str, Any]]:
        """A market's recording gaps (by slug or external market id), oldest
        first: {"from", "to"} as datetimes and "kind" (snapshots: none was
        stored; trades: trades may be missing)."""
        d = self._get(_market_path(slug, market_id, "gaps"))
        return [{"from": parse_time(g["from"]), "to": parse_time(g["to"]), "kind": g.get("kind", "snapshots")}
                for g in d.get("gaps") or []]

    def sweep_trials(self, sweep_id: str, *, limit: int = 100, offset: int = 0) -> TrialList:
        """A page of a DONE sweep's trials in trial order (GET
        /v1/sweeps/{id}/trials; limit 1 to 1,000): each its parameters and
        train and test statistics, as in get_sweep()'s results; a
        TrialList, a list with the page's total (the sweep's trials), limit
        and offset as attributes. A sweep not DONE raises SweepError (409
        SWEEP_NOT_DONE)."""
        d = self._get(f"/v1/sweeps/{_seg(sweep_id)}/trials", {"limit": limit, "offset": offset})["data"]
        page = TrialList(d.get("trials") or [])
        page.total, page.limit, page.offset = d.get("total"), d.get("limit"), d.get("offset")
        return page

    def sweep_trials_parquet(self, sweep_id: str, *, limit: int = 1000, offset: int = 0) -> ParquetPage:
        """A page of a DONE sweep's trials as a Parquet file's bytes, a row
        a trial with trials_frame()'s columns; a ParquetPage, its total
        attribute the sweep's trials."""
        return self._rows(f"/v1/sweeps/{_seg(sweep_id)}/trials", PARQUET, {"limit": limit, "offset": offset})

    def sweep_trials_csv(self, sweep_id: str, *, limit: int = 1000, offset: int = 0) -> CSVPage:
        """A page of a DONE sweep's trials as CSV text, its header row
        first, a row a trial with trials_frame()'s columns (a null an
        empty cell); a CSVPage, its total attribute the sweep's trials."""
        return self._rows(f"/v1/sweeps/{_seg(sweep_id)}/trials", CSV, {"limit": limit, "offset": offset})

    def get_sweep(self, sweep_id: str) -> Sweep:
        return Sweep.from_json(self._get(f"/v1/sweeps/{_seg(sweep_id)}")["data"])

    def cancel_sweep(self, sweep_id: str) -> Sweep:
        path = f"/v1/sweeps/{_seg(sweep_id)}"
        return Sweep.from_json(self._json("DELETE", path, self._send("DELETE", path, headers={"X-API-Key": self.api_key}))["data"])

    def account(self) -> Account:
        return Account.from_json(self._get("/v1/account")["data"])

    def job(self, job_id: str) -> Job:
        """A job's state, or its answer once done."""
        path = f"/v1/jobs/{_seg(job_id)}"
        answer = self._send("GET", path, headers={"X-API-Key": self.api_key})
        status, d = answer[0], self._json("GET", path, answer)
        data = d.get("data", d)
        if status == 202:
            return Job(id=data.get("id", job_id), state=data.get("state", ""), done=False)
        return Job(id=job_id, state="completed", done=True, result=data)

    # ---- bearer token (Backtest AI) ----------------------------------------

    def _bearer(self, renew: bool = False) -> str:
        now = _time.monotonic()
        if renew or self._token is None or now >= self._token[1]:
            d = self._post("/v1/auth/token", None)
            d = d.get("data", d)
            self._token = (d["access_token"], now + max(0.0, float(d.get("expires_in", 900)) - 30))
        return self._token[0]

    def _agent_send(self, method: str, path: str, body: Any = None, once: bool = False) -> Any:
        for renew in (False, True):
            headers = {"Authorization": "Bearer " + self._bearer(renew)}
            try:
                return self._json(method, path, self._send(method, path, body=body, headers=headers, once=once))
            except errors.AuthenticationError:
                if renew:
                    raise
        raise AssertionError("unreachable")


class Agent:
    """The Backtest AI agent (SPEC 4.4): the client fetches and renews its
    own bearer token with the API key."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def generate(self, prompt: str = "", **options: Any) -> Generation:
        """A replay-ready strategy from a prompt. options: preset, coin,
        marketType, marketCount, positionSize, maxLossPercent, orderType.
        A preset alone needs no prompt: generate(preset="dip_buying")."""
        d = self._c._agent_send("POST", "/v1/backtest-ai/generate", dict(options, prompt=prompt), once=True)
        return Generation.from_json(d["data"])

    def strategy(self, prompt: str = "", **options: Any) -> Backtest:
        """Generates a strategy and backtests it across resolved markets
        (a preset alone needs no prompt: strategy(preset="dip_buying"))."""
        count = {"marketCount": options["marketCount"]} if "marketCount" in options else {}
        try:
            d = self._c._agent_send("POST", "/v1/backtest-ai/strategy", dict(options, prompt=prompt), once=True)["data"]
        except errors.UpdownError as e:
            # The generation succeeded but the backtest could not start
            # (the queue down, too many jobs in flight): the generation is
            # spent, and the error holds its strategy. Backtest it with
            # /run, which uses no quota and is retried as usual.
            gs = e.details.get("generated_strategy")
            if not gs:
                raise
            return self.run(generated_strategy=gs, **count)
        if "results" not in d and d.get("generated_strategy"):
            # The generation outlasted the server's wait: its job (polled
            # after the 504) answers the strategy alone, and the backtest
            # never started. Backtest it here: /run uses no quota.
            return self.run(generated_strategy=d["generated_strategy"], **count)
        return Backtest.from_json(d)

    def run(self, *, generated_strategy: Optional[Dict[str, Any]] = None, strategy_code: Optional[str] = None,
            **options: Any) -> Backtest:
        """Backtests a strategy /generate returned (its generated_strategy,
        or its strategy_code)."""
        body = dict(options)
        if generated_strategy is not None:
            body["generatedStrategy"] = generated_strategy
        if strategy_code is not None:
            body["strategy_code"] = strategy_code
        return Backtest.from_json(self._c._agent_send("POST", "/v1/backtest-ai/run", body)["data"])

    def quota(self) -> Quota:
        """This month's generation quota."""
        return Quota.from_json(self._c._agent_send("GET", "/v1/backtest-ai/quota")["data"])


class _WindowNotice:
    """Warns once a walk that the plan's data window cut it (a page's
    warning, DESIGN 4): the walk's pages are what the window allows."""

    def __init__(self) -> None:
        self.said = False

    def page(self, warning: Optional[str]) -> None:
        if warning and not self.said:
            self.said = True
            warnings.warn(warning, errors.DataWindowWarning, stacklevel=_caller_level())


def _offset_walk(page: Callable[[int, int], Tuple[List[Any], int, Optional[str]]], key: Callable[[Any], str], *,
                 offset: int = 0, limit: Optional[int] = None, page_size: int = 100) -> Iterator[Any]:
    """A list that pages by offset, walked from the offset-th item on, each
    item once by its key, at most limit of them (None: all): page(offset,
    size) answers a page's items, the list's total and its warning. An
    item listed meanwhile at the top (the list is newest first) pushes the
    last of a page onto the next one, where it is passed over. A walk that
    runs out of items before its limit warns once with DataWindowWarning
    for a page's warning; one that has its limit was not cut (the window
    hides the oldest) and does not."""
    seen = set()
    warning: Optional[str] = None
    while True:
        got, total, w = page(offset, page_size if limit is None else max(1, min(page_size, limit - len(seen))))
        warning = w or warning
        for x in got:
            k = key(x)
            if k not in seen:
                seen.add(k)
                yield x
                if limit is not None and len(seen) >= limit:
                    return
        offset += len(got)
        if not got or offset >= total:
            _WindowNotice().page(warning)
            return


def _caller_level() -> int:
    """The stacklevel of warnings.warn, called from the function that calls
    this, that names the first frame outside this package: the user's line
    that walks, past the generator and any all_ or series() wrapper."""
    here = os.path.dirname(os.path.abspath(__file__))
    f, level = sys._getframe(2), 2
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == here:
        f, level = f.f_back, level + 1
    return level


def _decoded(headers: Dict[str, str], raw: bytes, partial: bool = False) -> bytes:
    """An answer's body as it was before its Content-Encoding (gzip, which
    the client asks for). A gzip body that does not decompress whole (cut
    short) raises http.client.HTTPException, as a body cut short does; with
    partial, what of it decompresses is returned instead (an error answer,
    whose status still says what to do)."""
    if headers.get("content-encoding", "").strip().lower() != "gzip":
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        if not partial:
            raise http.client.HTTPException(f"the answer's gzip body does not decompress ({e})") from e
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw)
    except zlib.error:
        return b""


def _http_time(v: Optional[str]) -> Optional[datetime]:
    """An HTTP date header (Last-Modified) as an aware UTC datetime; None
    when absent or unreadable."""
    if not v:
        return None
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc)


def _retry_after(v: Optional[str]) -> Optional[float]:
    """A Retry-After header in seconds: a number of seconds, or an HTTP
    date (RFC 9110), which proxies send too; None when absent or unreadable."""
    if v is None:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _seg(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _kind(kind: str) -> str:
    """The exchange market's path word: "spot" or "future" (the API's
    word; "futures", as the data is usually called, is taken too)."""
    k = kind.strip().lower()
    if k == "futures":
        k = "future"
    if k not in ("spot", "future"):
        raise ValueError(f"kind {kind!r} is not spot or future")
    return k


def _snapshots_path(slug: Optional[str], market_id: Optional[str]) -> str:
    return _market_path(slug, market_id, "snapshots")


def _market_path(slug: Optional[str], market_id: Optional[str], what: str) -> str:
    if (slug is None) == (market_id is None):
        raise ValueError("give a slug or a market_id")
    if slug is not None:
        return f"/v1/markets/{_seg(slug)}/{what}"
    return f"/v1/markets/by-market-id/{_seg(market_id)}/{what}"


def _sweep_markets(markets: Dict[str, Any]) -> Dict[str, Any]:
    """A sweep's markets with its start_time and end_time as the sweep body
    takes them (RFC 3339 or epoch milliseconds): a datetime, a date, a
    pandas Timestamp or a numpy time would not go into JSON."""
    out = dict(markets)
    for key in ("start_time", "end_time"):
        t = out.get(key)
        if t is None or isinstance(t, str):
            continue
        if isinstance(t, date) and not isinstance(t, datetime):
            t = datetime(t.year, t.month, t.day, tzinfo=timezone.utc)  # the API reads no bare date here
        try:
            v = _time_param(t)
        except TypeError as e:
            raise TypeError(f"markets[{key!r}]: {e}") from None
        out[key] = int(v) if v is not None and v.lstrip("-").isdigit() else v
    return out


def _series_params(start, end, order, limit, offset, cursor, **extra) -> Dict[str, Any]:
    if order not in ("asc", "desc"):
        raise ValueError("order is asc or desc")
    p: Dict[str, Any] = {"start_time": _time_param(start), "end_time": _time_param(end), "order": order,
                         "limit": limit, "cursor": cursor}
    if cursor is None or offset:
        p["offset"] = offset
    p.update(extra)
    return p


def _just_before(t: TimeLike) -> Optional[str]:
    """The /v1/markets start_time filter keeps markets starting strictly
    after it; series() means at or after, so it asks from 1 ms before."""
    s = _time_param(t)
    if s is None:
        return None
    if s.isdigit():
        return str(int(s) - 1)
    # The forms the API takes beside RFC 3339 (api.parseTimeParam): a space
    # or a small t between date and time, a small z; a bare date is midnight.
    v = s.strip()
    if len(v) > 10 and v[10] in " t":
        v = v[:10] + "T" + v[11:]
    if v.endswith("z"):
        v = v[:-1] + "Z"
    try:
        dt = datetime.fromisoformat(iso_for_python(v))
    except ValueError:
        return s  # not a time Python reads: the API's answer names what is wrong with it
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return str(int(dt.timestamp() * 1000) - 1)
