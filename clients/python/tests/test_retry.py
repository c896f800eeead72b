"""Retry paths (SPEC 7) against a scripted server: 429 and 503 first."""

import time
from datetime import datetime, timezone

import pytest

import updown

MARKET = {"slug": "btc-updown-15m-1", "market_id": "1", "event_id": "e", "market_type": "15m",
          "start_time": "2026-04-29T13:00:00Z", "end_time": "2026-04-29T13:15:00Z", "coin_price_start": None,
          "coin_price_end": None, "condition_id": "", "clob_token_up": "", "clob_token_down": "", "winner": None,
          "final_volume": None, "final_liquidity": None, "resolved_at": None,
          "created_at": "2026-04-29T13:00:00.123456Z", "updated_at": "2026-04-29T13:00:00.123Z"}


def err(code, message="x", **details):
    return {"success": False, "error": {"code": code, "message": message, "details": details},
            "timestamp": "2026-04-29T13:00:00Z"}


def client(fake, **kw):
    kw.setdefault("backoff", 0.01)
    return updown.Client(fake.url, "k", **kw)


def test_retries_429_then_503_honouring_retry_after(fake):
    fake.on("GET", "/v1/markets/m",
            (429, {"Retry-After": "1"}, err("RATE_LIMIT_EXCEEDED")),
            (503, {}, err("SERVICE_UNAVAILABLE")),
            (200, {}, MARKET))
    began = time.monotonic()
    m = client(fake).market("m")
    assert m.slug == "btc-updown-15m-1"
    assert m.created_at.microsecond == 123456 and m.updated_at.microsecond == 123000
    assert fake.count("/v1/markets/m") == 3
    # the wait after the 429 is at least its Retry-After
    t429, t503 = fake.seen[0][2], fake.seen[1][2]
    assert t503 - t429 >= 1.0
    assert time.monotonic() - began < 10


def test_backoff_grows_and_gives_up(fake):
    fake.on("GET", "/v1/markets/m", (500, {}, err("INTERNAL_ERROR", "boom")))
    waits = []
    c = client(fake, max_retries=3, backoff=1.0, sleep=waits.append)
    with pytest.raises(updown.ServerError) as e:
        c.market("m")
    assert fake.count("/v1/markets/m") == 4
    assert len(waits) == 3
    assert all(0 <= w <= 2 ** i for i, w in enumerate(waits))  # full jitter under the exponential cap
    assert e.value.code == "INTERNAL_ERROR" and e.value.status == 500 and e.value.message == "boom"
    assert e.value.request_id == "req-4"


@pytest.mark.parametrize("status,code,cls", [
    (400, "VALIDATION_ERROR", updown.ValidationError),
    (400, "INVALID_SIDE", updown.ValidationError),
    (401, "UNAUTHORIZED", updown.AuthenticationError),
    (403, "TIER_ACCESS_DENIED", updown.PermissionDeniedError),
    (403, "BACKTEST_AI_REQUIRED", updown.PermissionDeniedError),
    (404, "NO_DATA", updown.NotFoundError),
    # A sweep's trials asked before (or without) its results: the client's
    # own SweepError, as trials_frame() raises, not a ValidationError.
    (409, "SWEEP_NOT_DONE", updown.SweepError),
])
def test_never_retries_client_errors(fake, status, code, cls):
    fake.on("GET", "/v1/markets/m", (status, {}, err(code, "nope", required_tier="PRO")), (200, {}, MARKET))
    with pytest.raises(cls) as e:
        client(fake).market("m")
    assert fake.count("/v1/markets/m") == 1
    assert e.value.code == code and e.value.details["required_tier"] == "PRO"
    assert isinstance(e.value, updown.UpdownError)


def test_long_retry_after_is_not_waited(fake):
    fake.on("GET", "/v1/markets/m", (429, {"Retry-After": "3600"}, err("RATE_LIMIT_EXCEEDED")))
    with pytest.raises(updown.RateLimitError) as e:
        client(fake).market("m")
    assert e.value.retry_after == 3600
    assert fake.count("/v1/markets/m") == 1


def test_job_timeout_polls_the_job(fake):
    result = {"market": {"slug": "m"}, "strategy": {}, "performance": {"total_pnl": 1.5},
              "trades": [{"type": "ENTRY", "time": "2026-04-29T13:00:00Z", "price": 0.4}],
              "pnl_curve": [{"time": "2026-04-29T13:00:00Z", "pnl": 0}], "total_snapshots": 10}
    fake.on("POST", "/v1/replay", (504, {}, err("JOB_TIMEOUT", "still running", job_id="j1")))
    fake.on("GET", "/v1/jobs/j1",
            (503, {}, err("SERVICE_UNAVAILABLE")),
            (202, {}, {"success": True, "data": {"id": "j1", "state": "active"}}),
            (200, {}, {"success": True, "data": result}))
    polls = []
    r = client(fake, job_poll=0.0, sleep=polls.append).replay("m", "UP", [], [], 10)
    assert r.performance["total_pnl"] == 1.5 and r.total_snapshots == 10
    assert fake.count("/v1/replay") == 1  # the job is polled, the replay not sent again
    assert fake.count("/v1/jobs/j1") == 3


def test_job_timeout_gives_up_after_job_wait(fake):
    fake.on("POST", "/v1/replay", (504, {}, err("JOB_TIMEOUT", "still running", job_id="j2")))
    fake.on("GET", "/v1/jobs/j2", (202, {}, {"success": True, "data": {"id": "j2", "state": "active"}}))
    with pytest.raises(updown.JobTimeoutError) as e:
        client(fake, job_wait=0.2, job_poll=0.05).replay("m", "UP", [], [], 10)
    assert e.value.job_id == "j2"


def test_unreachable_server(fake):
    c = updown.Client("http://127.0.0.1:9", "k", max_retries=1, backoff=0.01)
    with pytest.raises(updown.ConnectionError):
        c.market("m")


def test_replay_sent_again_after_a_lost_connection(fake):
    # A replay changes nothing: sent again after the connection was lost.
    result = {"market": {"slug": "m"}, "strategy": {}, "performance": {"total_pnl": 2.0}, "trades": [],
              "pnl_curve": [], "total_snapshots": 10}
    fake.on("POST", "/v1/replay", (0, {}, None), (200, {}, {"success": True, "data": result}))
    r = client(fake).replay("m", "UP", [], [], 10)
    assert r.performance["total_pnl"] == 2.0
    assert fake.count("/v1/replay") == 2


@pytest.mark.parametrize("path,call", [
    ("/v1/sweeps", lambda c: c.sweep({"side": "UP"}, [{"path": "/positionSize", "values": [1, 2]}],
                                     {"coin": "BTC", "market_type": "15m", "count": 5}, wait=False)),
    ("/v1/backtest-ai/generate", lambda c: c.agent.generate("buy the dip")),
    ("/v1/backtest-ai/strategy", lambda c: c.agent.strategy("buy the dip")),
])
def test_lost_connection_does_not_start_twice(fake, path, call):
    # A sweep started, or a generation that spends the month's quota, may
    # have been acted on when the connection was lost before the answer:
    # it is not sent again, and the error says to check.
    fake.on("POST", "/v1/auth/token", (200, {}, {"access_token": "t", "token_type": "Bearer", "expires_in": 900}))
    fake.on("POST", path, (0, {}, None), (500, {}, err("INTERNAL_ERROR", "sent twice")))
    with pytest.raises(updown.ConnectionError) as e:
        call(client(fake))
    assert fake.count(path) == 1
    assert "may have acted on it" in str(e.value)


@pytest.mark.parametrize("path,call", [
    ("/v1/sweeps", lambda c: c.sweep({"side": "UP"}, [{"path": "/positionSize", "values": [1, 2]}],
                                     {"coin": "BTC", "market_type": "15m", "count": 5}, wait=False)),
    ("/v1/backtest-ai/generate", lambda c: c.agent.generate("buy the dip")),
    ("/v1/backtest-ai/strategy", lambda c: c.agent.strategy("buy the dip")),
])
@pytest.mark.parametrize("status", [502, 504])
def test_gateway_error_does_not_start_twice(fake, path, call, status):
    # A proxy in front of the API that stops waiting (nginx's 504 after its
    # 60 s, while a generation still runs) answers for the API, which may
    # have acted: a generation spent, a sweep started. Such a request is not
    # sent again, as after a lost connection; the error says to check.
    fake.on("POST", "/v1/auth/token", (200, {}, {"access_token": "t", "token_type": "Bearer", "expires_in": 900}))
    fake.on("POST", path, (status, {}, f"<html><body>{status} from the proxy</body></html>"),
            (500, {}, err("INTERNAL_ERROR", "sent twice")))
    with pytest.raises(updown.ServerError) as e:
        call(client(fake))
    assert fake.count(path) == 1
    assert e.value.status == status
    assert "may have acted on it" in str(e.value)


def test_api_5xx_of_a_generation_is_retried(fake):
    # The API's own 5xx says what happened (a failed generation spends
    # nothing): retried as SPEC 7 says.
    fake.on("POST", "/v1/auth/token", (200, {}, {"access_token": "t", "token_type": "Bearer", "expires_in": 900}))
    gen = {"generated_strategy": {"side": "UP"}, "strategy_code": "side=UP", "quota": None}
    fake.on("POST", "/v1/backtest-ai/generate", (502, {}, err("AI_STRATEGY_GENERATION_FAILED", "model down")),
            (200, {}, {"success": True, "data": gen}))
    g = client(fake).agent.generate("buy the dip")
    assert g.strategy_code == "side=UP"
    assert fake.count("/v1/backtest-ai/generate") == 2


@pytest.mark.parametrize("path,call", [
    ("/v1/backtest-ai/generate", lambda a: a.generate(preset="dip_buying")),
    ("/v1/backtest-ai/strategy", lambda a: a.strategy(preset="dip_buying", marketCount=3)),
])
def test_agent_preset_alone_needs_no_prompt(fake, path, call):
    # The API takes a preset without a prompt (README: "a preset alone
    # needs no prompt"); the client made the prompt a required argument.
    fake.on("POST", "/v1/auth/token", (200, {}, {"access_token": "t", "token_type": "Bearer", "expires_in": 900}))
    answer = {"generated_strategy": {"side": "UP"}, "strategy_code": "side=UP", "quota": None,
              "aggregate": {}, "results": [], "warning": None}
    fake.on("POST", path, (200, {}, {"success": True, "data": answer}))
    assert call(client(fake).agent).strategy_code == "side=UP"
    assert fake.bodies[-1] == dict({"preset": "dip_buying", "prompt": ""}, **({"marketCount": 3} if path.endswith("strategy") else {}))


def test_series_start_on_python_before_3_11(monkeypatch):
    # Before 3.11, datetime.fromisoformat takes no Z and exactly 3 or 6
    # fractional digits: series()'s start of "...13:00:00.5Z" must still read.
    import re
    from datetime import datetime as real
    from updown import client as mod

    class Py39(real):
        @classmethod
        def fromisoformat(cls, s):
            if s.endswith("Z") or re.search(r"\.(\d+)", s) and len(re.search(r"\.(\d+)", s).group(1)) not in (3, 6):
                raise ValueError(f"Invalid isoformat string: {s!r}")
            return real.fromisoformat(s)

    monkeypatch.setattr(mod, "datetime", Py39)
    ms = 1777467600000
    assert mod._just_before("2026-04-29T13:00:00.5Z") == str(ms + 500 - 1)
    assert mod._just_before("2026-04-29T13:00:00Z") == str(ms - 1)
    assert mod._just_before("2026-04-29") == str(1777420800000 - 1)


def test_iter_snapshots_parquet_follows_the_cursor_header(fake):
    par = {"Content-Type": "application/vnd.apache.parquet"}
    fake.on("GET", "/v1/markets/m/snapshots",
            (200, dict(par, **{"X-Next-Cursor": "c1", "X-Total-Count": "3"}), b"PAR1 one PAR1"),
            (200, dict(par, **{"X-Total-Count": "3"}), b"PAR1 two PAR1"))
    pages = list(client(fake).iter_snapshots_parquet("m", limit=2))
    assert len(pages) == 2
    queries = [p for _, p, _ in fake.seen]
    assert "cursor=c1" in queries[1] and "cursor" not in queries[0] and "offset" not in queries[1]


def test_sweep_refused_while_another_runs_is_not_retried(fake):
    fake.on("POST", "/v1/sweeps", (429, {"Retry-After": "45"}, err("RATE_LIMIT_EXCEEDED", "a sweep is already running",
                                                                   limit="concurrent_sweeps", max=1, retry_after=45)))
    waits = []
    with pytest.raises(updown.RateLimitError) as e:
        client(fake, sleep=waits.append).sweep({"side": "UP"}, [{"path": "/positionSize", "values": [1, 2]}],
                                               {"coin": "BTC", "market_type": "15m", "count": 5}, wait=False)
    assert fake.count("/v1/sweeps") == 1 and waits == []
    assert e.value.retry_after == 45 and e.value.details["limit"] == "concurrent_sweeps"


def test_times_from_numpy_and_pandas():
    np = pytest.importorskip("numpy")
    from updown.client import _time_param
    ms = 1777467600000
    assert _time_param(np.int64(ms)) == str(ms)
    assert _time_param(np.float64(ms)) == str(ms)
    assert _time_param(np.datetime64(ms, "ms")) == str(ms)
    assert _time_param(np.datetime64("2026-04-29T13:00:00.000000123")) == "2026-04-29T13:00:00.000000123Z"
    with pytest.raises(TypeError):
        _time_param(True)


def test_numpy_times_keep_what_is_below_the_millisecond():
    # A frame's times are numpy's with microseconds (df.time.values[i]): a
    # walk resumed at the last snapshot's time plus 1 µs must start after
    # that snapshot, so the time sent is that instant, not its millisecond
    # (the API takes start_time inclusive, rounded up to its microseconds).
    np = pytest.importorskip("numpy")
    from updown.client import _time_param
    last = np.datetime64("2026-04-29T13:00:00.565429", "us")
    assert _time_param(last + np.timedelta64(1, "us")) == "2026-04-29T13:00:00.565430Z"
    assert _time_param(np.datetime64("2026-04-29T13:00:00.565429001", "ns")) == "2026-04-29T13:00:00.565429001Z"
    assert _time_param(np.datetime64("2026-04-29T13:00:00.565", "ns")) == "1777467600565"
    assert _time_param(np.datetime64("9999-12-31T23:59:59.999999", "us")) == "9999-12-31T23:59:59.999999Z"
    with pytest.raises(ValueError):
        _time_param(np.datetime64("NaT"))


def test_a_time_that_is_nan_or_nat_says_so():
    # pandas' NaT (df.time.max() of an empty frame) raised "NaTType does
    # not support astimezone", and a float NaN "cannot convert float NaN to
    # integer": neither named the time given.
    pd = pytest.importorskip("pandas")
    from updown.client import _time_param
    for t in (pd.NaT, float("nan"), pd.Series([], dtype="datetime64[ns, UTC]").max()):
        with pytest.raises(ValueError, match="a time cannot be .*NaN or NaT"):
            _time_param(t)
    with pytest.raises(ValueError, match="NaN or NaT"):
        updown.Client("http://127.0.0.1:9", "k").snapshots("m", start=pd.NaT)


def test_float_epoch_milliseconds_keep_their_fraction():
    # Epoch milliseconds computed from a frame's nanoseconds (ns / 1e6) have
    # a fraction: the last snapshot's time plus 1 µs must not be cut back to
    # the millisecond, where the inclusive start_time would take that
    # snapshot again.
    from updown.client import _time_param
    ms = 1777467600565
    assert _time_param((ms * 1_000_000 + 430_000) / 1e6) == "2026-04-29T13:00:00.565430Z"
    assert _time_param(float(ms)) == str(ms)
    assert _time_param(ms) == str(ms)


def test_float_epoch_seconds_are_refused_as_whole_ones_are(fake):
    # time.time() and datetime.timestamp() are epoch seconds with a
    # fraction: the API refuses an int of seconds (400 "looks like epoch
    # seconds"), and a float must not slip past that as milliseconds of
    # January 1970, answering the whole series instead.
    from updown.client import _time_param
    assert _time_param(1777467600.565) == "1777467600"
    assert _time_param(1777467600) == "1777467600"
    fake.on("GET", "/v1/markets/m/snapshots", (400, {}, err("VALIDATION_ERROR", "start_time looks like epoch seconds")))
    with pytest.raises(updown.ValidationError):
        client(fake).snapshots("m", start=1777467600.565)
    assert "start_time=1777467600&" in fake.seen[0][1] + "&"


def test_timeout_outlasts_the_servers_job_wait():
    # A slow job answers 504 JOB_TIMEOUT after the server's JOB_WAIT (60 s
    # by default); a client timing out first would send it again instead
    # of polling the job.
    assert updown.Client("http://x", "k").timeout > 60


def test_sweep_wait_uses_the_injected_sleep(fake):
    state = {"sweep_id": "s1", "status": "RUNNING", "trials": 1, "markets": 1, "replays": 1,
             "progress": {"replays_done": 0, "replays_total": 1, "eta_seconds": None}}
    done = dict(state, status="DONE", progress={"replays_done": 1, "replays_total": 1, "eta_seconds": 0})
    fake.on("POST", "/v1/sweeps", (202, {}, {"success": True, "data": state, "timestamp": "2026-04-29T13:00:00Z"}))
    fake.on("GET", "/v1/sweeps/s1", (200, {}, {"success": True, "data": state, "timestamp": "2026-04-29T13:00:00Z"}),
            (200, {}, {"success": True, "data": done, "timestamp": "2026-04-29T13:00:00Z"}))
    slept = []
    s = client(fake, sleep=slept.append).sweep({"side": "UP"}, [{"path": "/positionSize", "values": [1]}],
                                              {"coin": "BTC", "market_type": "15m", "count": 1}, poll=7.5)
    assert s.done and slept == [7.5]


def test_replay_all_trades_pages_through_a_truncated_answer(fake):
    """all_trades=True: an answer that lists the first and last 500 of
    2,300 events is followed by pages of 1,000 from offset 0 until every
    event is in trades."""
    def ev(i):
        return {"type": "ENTRY" if i % 2 == 0 else "EXIT", "time": f"2026-04-29T13:00:00.{i:06d}Z", "n": i}

    def answer(events, truncated):
        return (200, {}, {"success": True, "data": {"performance": {"trade_events": 2300}, "trades": events,
                                                     "pnl_curve": [], "total_snapshots": 5000,
                                                     "trades_truncated": truncated}})

    fake.on("POST", "/v1/replay",
            answer([ev(i) for i in range(0, 1000)], True),
            answer([ev(i) for i in range(1000, 2000)], True),
            answer([ev(i) for i in range(2000, 2300)], True))
    r = client(fake).replay("m", "UP", [], [], 10, all_trades=True)
    assert [t["n"] for t in r.trades] == list(range(2300)) and not r.trades_truncated
    # The pages after the first are times like the first page's (aware datetimes).
    assert r.trades[2299]["time"] == datetime(2026, 4, 29, 13, 0, 0, 2299, tzinfo=timezone.utc)
    assert all(isinstance(t["time"], datetime) for t in r.trades)
    assert [(b.get("tradesOffset"), b.get("tradesLimit")) for b in fake.bodies] == [(0, 1000), (1000, 1000), (2000, 1000)]
    assert all(b["marketSlug"] == "m" and b["positionSize"] == 10 for b in fake.bodies)


def test_redirect_is_not_followed_with_the_key(fake):
    """A redirect (a proxy's, a moved host) is not followed: urllib would
    send X-API-Key, and the agent's bearer token, on to whatever host the
    Location names. The API itself never redirects."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    got = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_GET(self):
            got.append(dict(self.headers))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            raw = b'{"success":true,"data":{}}'
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args):
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        where = f"http://127.0.0.1:{other.server_address[1]}/v1/markets/m"
        for status in (301, 302, 307, 308):
            fake.on("GET", "/v1/markets/m", (status, {"Location": where}, {}))
            with pytest.raises(updown.UpdownError) as e:
                client(fake).market("m")
            assert e.value.status == status
            assert where in str(e.value)
        assert got == [], f"the redirect was followed, the key sent elsewhere: {got}"
    finally:
        other.shutdown()
        other.server_close()


def test_iter_markets_reads_each_market_once_while_new_ones_arrive(fake):
    # /v1/markets pages by offset, newest start first: a market listed
    # while the walk goes on (the collector lists each series' next market)
    # pushes the last market of a page onto the next one.
    def market(i):
        return dict(MARKET, slug=f"btc-updown-15m-{i}")

    def page(ms, total, offset):
        return 200, {}, {"markets": ms, "total": total, "limit": 100, "offset": offset, "warning": None}

    fake.on("GET", "/v1/markets",
            page([market(i) for i in range(150, 50, -1)], 150, 0),
            page([market(i) for i in range(51, 0, -1)], 151, 100))  # market 151 arrived meanwhile
    slugs = [m.slug for m in client(fake).iter_markets("BTC")]
    assert slugs == [f"btc-updown-15m-{i}" for i in range(150, 0, -1)]
    assert fake.count("/v1/markets") == 2


@pytest.mark.parametrize("retry_after", ["7", "Sun, 06 Nov 1994 08:49:37 GMT"])
def test_5xx_retry_honours_retry_after(fake, retry_after):
    # SPEC 7: 5xx is retried honouring Retry-After, as 429 is: a proxy in
    # front of the API (maintenance, overload) answers 503 with one, in
    # seconds or as an HTTP date (one in the past: no wait beyond the
    # backoff).
    fake.on("GET", "/v1/markets/m", (503, {"Retry-After": retry_after}, err("SERVICE_UNAVAILABLE")), (200, {}, MARKET))
    waits = []
    assert client(fake, sleep=waits.append).market("m").slug == MARKET["slug"]
    assert len(waits) == 1
    if retry_after.isdigit():
        assert waits[0] >= 7
    else:
        assert waits[0] < 1


def test_5xx_retry_after_too_long_is_raised(fake):
    fake.on("GET", "/v1/markets/m", (503, {"Retry-After": "3600"}, err("SERVICE_UNAVAILABLE")), (200, {}, MARKET))
    with pytest.raises(updown.ServerError) as e:
        client(fake).market("m")
    assert e.value.retry_after == 3600 and fake.count("/v1/markets/m") == 1


def test_strategy_whose_generation_timed_out_is_backtested(fake):
    # A /strategy whose generation outlasts the server's wait answers 504
    # with the generation's job (ai-...), whose answer is the strategy
    # alone: the backtest never started. agent.strategy() then backtests
    # that strategy with /run (no quota), rather than hand back a Backtest
    # without results, or generate again.
    gs = {"side": "UP", "entryConditions": [{"field": "price_up", "operator": "<", "value": 0.4}],
          "exitConditions": [{"field": "price_up", "operator": ">", "value": 0.6}], "positionSize": 100,
          "maxLossPercent": 50, "orderType": "MARKET", "coin": "ETH", "marketType": "5m", "explanation": "e"}
    quota = {"used": 1, "limit": 5, "remaining": 4, "resets_at": "2026-05-01T00:00:00.000Z"}
    report = {"generated_strategy": gs, "strategy_code": "c", "aggregate": {"markets_tested": 3},
              "results": [{"slug": "a"}, {"slug": "b"}, {"slug": "c"}], "quota": quota, "warning": None}
    fake.on("POST", "/v1/auth/token", (200, {}, {"access_token": "t", "token_type": "Bearer", "expires_in": 900}))
    fake.on("POST", "/v1/backtest-ai/strategy", (504, {}, err("JOB_TIMEOUT", "still running", job_id="ai-1")))
    fake.on("GET", "/v1/jobs/ai-1", (200, {}, {"success": True, "data": {"generated_strategy": gs, "strategy_code": "c", "quota": quota}}))
    fake.on("POST", "/v1/backtest-ai/run", (200, {}, {"success": True, "data": report}))
    b = client(fake, job_poll=0.0).agent.strategy("buy the dip", coin="ETH", marketType="5m", marketCount=3)
    assert b.aggregate == {"markets_tested": 3} and len(b.results) == 3 and b.generated_strategy == gs
    assert fake.count("/v1/backtest-ai/strategy") == 1 and fake.count("/v1/backtest-ai/run") == 1
    assert fake.bodies[-1] == {"generatedStrategy": gs, "marketCount": 3}


@pytest.mark.parametrize("status,headers,code,details", [
    (503, {}, "SERVICE_UNAVAILABLE", {}),
    (429, {"Retry-After": "1"}, "RATE_LIMIT_EXCEEDED", {"limit": "concurrent_jobs"}),
])
def test_strategy_whose_backtest_could_not_start_is_not_generated_again(fake, status, headers, code, details):
    # A /strategy whose generation succeeded but whose backtest could not
    # start (the queue down, the customer's jobs in flight) has spent a
    # generation of the month: its error carries the strategy in
    # details.generated_strategy. Sending /strategy again, as a 503 or a
    # 429 otherwise is, would spend another generation each time;
    # agent.strategy() backtests the strategy it has with /run (no quota).
    gs = {"side": "UP", "entryConditions": [{"field": "price_up", "operator": "<", "value": 0.4}],
          "exitConditions": [{"field": "price_up", "operator": ">", "value": 0.6}], "positionSize": 100,
          "maxLossPercent": 50, "orderType": "MARKET", "coin": "ETH", "marketType": "5m", "explanation": "e"}
    quota = {"used": 1, "limit": 5, "remaining": 4, "resets_at": "2026-05-01T00:00:00.000Z"}
    report = {"generated_strategy": gs, "strategy_code": "c", "aggregate": {"markets_tested": 3},
              "results": [{"slug": "a"}, {"slug": "b"}, {"slug": "c"}], "quota": quota, "warning": None}
    fake.on("POST", "/v1/auth/token", (200, {}, {"access_token": "t", "token_type": "Bearer", "expires_in": 900}))
    fake.on("POST", "/v1/backtest-ai/strategy",
            (status, headers, err(code, "the backtest could not start", generated_strategy=gs, strategy_code="c", quota=quota, **details)),
            (200, {}, {"success": True, "data": report}))
    fake.on("POST", "/v1/backtest-ai/run", (200, {}, {"success": True, "data": report}))
    b = client(fake).agent.strategy("buy the dip", coin="ETH", marketType="5m", marketCount=3)
    assert b.aggregate == {"markets_tested": 3} and b.generated_strategy == gs
    assert fake.count("/v1/backtest-ai/strategy") == 1 and fake.count("/v1/backtest-ai/run") == 1
    assert fake.bodies[-1] == {"generatedStrategy": gs, "marketCount": 3}


def test_series_start_in_every_form_the_api_takes(fake):
    # series() asks for markets from 1 ms before its start. A start the API
    # takes (a space or a small t between date and time, a small z, no
    # seconds) raised "Invalid isoformat string" in Python before any
    # request; one the API refuses is the API's to name.
    empty = {"markets": [], "total": 0, "limit": 100, "offset": 0, "warning": None}
    fake.on("GET", "/v1/markets", (200, {}, empty))
    c = client(fake)
    for start in ("2026-04-29 13:00:00", "2026-04-29t13:00:00z", "2026-04-29 13:00", "2026-04-29T13:00:00.000+00:00"):
        assert c.series("BTC", "15m", start, "2026-04-30") == []
        assert "start_time=1777467599999&" in fake.seen[-1][1], (start, fake.seen[-1][1])
    fake.on("GET", "/v1/markets", (400, {}, err("VALIDATION_ERROR", "invalid request: start_time: expected epoch milliseconds")))
    with pytest.raises(updown.ValidationError):
        c.series("BTC", "15m", "yesterday", "2026-04-30")
    assert "start_time=yesterday&" in fake.seen[-1][1]


def test_walks_the_plan_window_cut_say_so(fake):
    # A list past the plan's data window is answered with what the window
    # allows and a warning (DESIGN 4): iter_markets, all_markets and
    # series() (a Starter's week of 5m markets is its newest 50), and
    # iter_depth (PRO's 31 days of depth history) passed the cut-down walk
    # off as the whole, without a word. They warn once a walk.
    cut = "12 older market(s) matching this filter are outside the STARTER plan's data window"
    fake.on("GET", "/v1/markets",
            (200, {}, {"markets": [MARKET], "total": 2, "limit": 100, "offset": 0, "warning": cut}),
            (200, {}, {"markets": [dict(MARKET, slug="btc-updown-15m-0")], "total": 2, "limit": 100, "offset": 1,
                       "warning": cut}))
    with pytest.warns(updown.DataWindowWarning, match="outside the STARTER plan's data window") as w:
        assert len(client(fake).all_markets("BTC", market_type="15m")) == 2
    assert len(w) == 1
    depth = {"symbol": "BTCUSDT", "time_epoch_ms": 1777467600000, "coin_price": 1, "bids": [], "asks": [],
             "last_update_id": 1}
    fake.on("GET", "/v1/btc/spot/snapshots",
            (200, {}, {"data": [depth], "total": 1, "limit": 1000, "offset": 0, "next_cursor": None,
                       "warning": "start_time is before the PRO plan's 31-day window of exchange history"}))
    with pytest.warns(updown.DataWindowWarning, match="31-day window"):
        assert len(list(client(fake).iter_depth("spot", start=0))) == 1
    # No warning, none raised.
    fake.on("GET", "/v1/markets", (200, {}, {"markets": [MARKET], "total": 1, "limit": 100, "offset": 0, "warning": None}))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(client(fake).all_markets("BTC")) == 1


def test_gaps_by_market_id(fake):
    # GET /v1/markets/by-market-id/{marketId}/gaps, as snapshots and trades
    # are read by the external id: gaps() took a slug only.
    fake.on("GET", "/v1/markets/by-market-id/95786144/gaps",
            (200, {}, {"market": MARKET, "gaps": [{"from": "2026-04-29T13:01:00Z", "to": "2026-04-29T13:02:00Z",
                                                   "kind": "trades"}]}))
    gaps = client(fake).gaps(market_id="95786144")
    assert [g["kind"] for g in gaps] == ["trades"] and gaps[0]["from"].minute == 1
    with pytest.raises(ValueError):
        client(fake).gaps()


@pytest.mark.parametrize("ctype,body", [("text/html; charset=utf-8", b"<!doctype html><html><body>updown</body></html>"),
                                        ("text/plain", b"upstream connect error")])
def test_an_answer_that_is_not_the_apis_says_so(fake, ctype, body):
    # base_url set to the dashboard's address (http://host:8080/app/, which
    # `updown dev` prints first) is answered 200 with its page for every
    # path: json.loads raised "Expecting value: line 1 column 1 (char 0)",
    # and a Parquet read returned the page's HTML as the file's bytes.
    fake.on("GET", "/v1/markets", (200, {"Content-Type": ctype}, body))
    fake.on("GET", "/v1/markets/m/snapshots", (200, {"Content-Type": ctype}, body))
    c = client(fake)
    with pytest.raises(updown.UpdownError, match="not the API's answer.*base_url") as e:
        c.markets("BTC")
    assert e.value.status == 200
    if ctype.startswith("text/html"):
        with pytest.raises(updown.UpdownError, match="base_url"):
            c.snapshots_parquet("m")


def test_all_markets_takes_limit_and_offset(fake):
    # all_markets("BTC", limit=150) raised TypeError "got multiple values
    # for keyword argument 'limit'" (and iter_markets(offset=) alike): the
    # walk passed its own page's limit and offset beside the caller's. limit
    # is the most markets read, offset where the walk starts.
    def market(i):
        return dict(MARKET, slug=f"btc-updown-15m-{i}")

    def page(lo, hi, offset):
        return 200, {}, {"markets": [market(i) for i in range(hi, lo, -1)], "total": 300, "limit": hi - lo,
                         "offset": offset, "warning": None}

    fake.on("GET", "/v1/markets", page(200, 300, 0), page(150, 200, 100))
    got = client(fake).all_markets("BTC", market_type="15m", limit=150)
    assert [m.slug for m in got] == [f"btc-updown-15m-{i}" for i in range(300, 150, -1)]
    queries = [p for _, p, _ in fake.seen]
    assert "limit=100&offset=0" in queries[0] and "limit=50&offset=100" in queries[1] and len(queries) == 2
    fake.on("GET", "/v1/markets", page(290, 295, 5))
    got = list(client(fake).iter_markets("BTC", limit=5, offset=5))
    assert [m.slug for m in got] == [f"btc-updown-15m-{i}" for i in range(295, 290, -1)]
    assert "limit=5&offset=5" in fake.seen[-1][1]
    with pytest.raises(ValueError, match="limit"):
        client(fake).all_markets("BTC", limit=0)


def test_sweep_markets_take_datetimes(fake):
    # markets.start_time and end_time as a datetime (a pandas Timestamp, a
    # date) raised TypeError "Object of type datetime is not JSON
    # serializable" before any request; they go as RFC 3339 (a date:
    # midnight UTC, naive times UTC) or epoch milliseconds.
    from datetime import date, datetime, timedelta, timezone
    state = {"sweep_id": "s1", "status": "QUEUED", "trials": 1, "markets": 1, "replays": 1, "progress": {}}
    fake.on("POST", "/v1/sweeps", (202, {}, {"success": True, "data": state, "timestamp": "2026-04-29T13:00:00Z"}))
    c = client(fake)
    c.sweep({"side": "UP"}, [{"path": "/positionSize", "values": [1]}],
            {"coin": "BTC", "market_type": "15m", "count": 5,
             "start_time": datetime(2026, 4, 29, 15, 0, tzinfo=timezone(timedelta(hours=2))),
             "end_time": datetime(2026, 4, 30, 0, 0, 0, 500000)}, wait=False)
    assert fake.bodies[-1]["markets"] == {"coin": "BTC", "market_type": "15m", "count": 5,
                                          "start_time": "2026-04-29T13:00:00Z", "end_time": "2026-04-30T00:00:00.500000Z"}
    c.sweep({"side": "UP"}, [{"path": "/positionSize", "values": [1]}],
            {"coin": "BTC", "market_type": "15m", "count": 5, "start_time": date(2026, 4, 29), "end_time": 1777507200000},
            wait=False)
    assert fake.bodies[-1]["markets"]["start_time"] == "2026-04-29T00:00:00Z"
    assert fake.bodies[-1]["markets"]["end_time"] == 1777507200000
    pd = pytest.importorskip("pandas")
    c.sweep({"side": "UP"}, [{"path": "/positionSize", "values": [1]}],
            {"coin": "BTC", "market_type": "15m", "count": 5, "start_time": pd.Timestamp("2026-04-29 13:00", tz="UTC"),
             "end_time": pd.Timestamp("2026-04-30").to_datetime64()}, wait=False)
    assert fake.bodies[-1]["markets"]["start_time"] == "2026-04-29T13:00:00Z"
    assert fake.bodies[-1]["markets"]["end_time"] == 1777507200000


@pytest.mark.parametrize("status,error,words", [("FAILED", "replay failed: NO_DATA", "replay failed: NO_DATA"),
                                                ("CANCELLED", None, "cancelled")])
def test_sweep_that_ends_without_results_raises(fake, status, error, words):
    # sweep() returned a FAILED (or CANCELLED) sweep like a DONE one, and
    # its trials_frame() was an empty frame without a column: a sweep that
    # found nothing, to a script that goes on to df.sort_values(...).
    state = {"sweep_id": "s1", "status": "RUNNING", "trials": 4, "markets": 20, "replays": 80,
             "progress": {"replays_done": 0, "replays_total": 80, "eta_seconds": None}}
    end = dict(state, status=status, error=error, progress={"replays_done": 12, "replays_total": 80, "eta_seconds": None})
    fake.on("POST", "/v1/sweeps", (202, {}, {"success": True, "data": state, "timestamp": "2026-04-29T13:00:00Z"}))
    fake.on("GET", "/v1/sweeps/s1", (200, {}, {"success": True, "data": end, "timestamp": "2026-04-29T13:00:00Z"}))
    with pytest.raises(updown.SweepError, match=words) as e:
        client(fake, sleep=lambda s: None).sweep({"side": "UP"}, [{"path": "/positionSize", "values": [1, 2, 3, 4]}],
                                                 {"coin": "BTC", "market_type": "15m", "count": 20})
    assert f"s1 ended {status}" in str(e.value) and "12 of 80" in str(e.value)
    assert e.value.sweep.status == status and e.value.details["sweep_id"] == "s1"
    # Its trials, or a sweep not yet DONE's, are refused in words too.
    with pytest.raises(updown.SweepError, match=f"is {status}"):
        e.value.sweep.trials_frame()
    with pytest.raises(updown.SweepError, match="is RUNNING"):
        updown.Sweep.from_json(state).trials_frame()


def test_sweep_wait_that_times_out_names_the_sweep_to_wait_on(fake):
    # sweep()'s timeout raised JobTimeoutError whose job_id was None and
    # which had no sweep_id: a script that caught it could not tell which
    # sweep to wait on (the POST's answer was never returned), nor had the
    # client a way to wait on it.
    state = {"sweep_id": "s1", "status": "RUNNING", "trials": 4, "markets": 20, "replays": 80,
             "progress": {"replays_done": 12, "replays_total": 80, "eta_seconds": 30}}
    done = dict(state, status="DONE", progress={"replays_done": 80, "replays_total": 80, "eta_seconds": 0})
    fake.on("POST", "/v1/sweeps", (202, {}, {"success": True, "data": state, "timestamp": "2026-04-29T13:00:00Z"}))
    fake.on("GET", "/v1/sweeps/s1", (200, {}, {"success": True, "data": state, "timestamp": "2026-04-29T13:00:00Z"}),
            (200, {}, {"success": True, "data": done, "timestamp": "2026-04-29T13:00:00Z"}))
    c = client(fake, sleep=lambda s: None)
    with pytest.raises(updown.JobTimeoutError) as e:
        c.sweep({"side": "UP"}, [{"path": "/positionSize", "values": [1, 2, 3, 4]}],
                {"coin": "BTC", "market_type": "15m", "count": 20}, timeout=0)
    assert e.value.sweep_id == "s1" and e.value.code == "JOB_TIMEOUT"
    assert "s1" in str(e.value) and "wait_sweep" in str(e.value)
    seen = []
    s = c.wait_sweep(e.value.sweep_id, progress=seen.append)
    assert s.status == "DONE" and [x.status for x in seen] == ["DONE"]
    assert fake.count("/v1/sweeps") == 1  # waiting on never starts it again


def test_trials_of_a_listed_sweep_say_where_they_are(fake):
    # sweeps() lists sweeps without their results: a DONE one's
    # trials_frame() was empty, as if it had no trials.
    done = {"sweep_id": "s1", "status": "DONE", "trials": 4, "markets": 20, "replays": 80,
            "progress": {"replays_done": 80, "replays_total": 80, "eta_seconds": None}}
    fake.on("GET", "/v1/sweeps", (200, {}, {"success": True, "data": {"sweeps": [done], "total": 1, "limit": 20, "offset": 0},
                                            "timestamp": "2026-04-29T13:00:00Z"}))
    [s] = client(fake).sweeps()
    with pytest.raises(updown.SweepError, match=r"get_sweep"):
        s.trials_frame()


def test_numpy_values_in_a_body_are_json_numbers(fake):
    # A researcher's values come from numpy and pandas: a trials_frame()
    # cell (numpy.int64), np.arange(...) as a sweep's values. json.dumps
    # raised "Object of type int64 is not JSON serializable" before any
    # request; a numpy time is still refused (its tolist() is nanoseconds).
    np = pytest.importorskip("numpy")
    fake.on("POST", "/v1/replay", (200, {}, {"success": True, "data": {"performance": {}, "trades": [], "pnl_curve": [],
                                                                       "total_snapshots": 1}}))
    state = {"sweep_id": "s1", "status": "QUEUED", "trials": 3, "markets": 5, "replays": 15, "progress": {}}
    fake.on("POST", "/v1/sweeps", (202, {}, {"success": True, "data": state, "timestamp": "2026-04-29T13:00:00Z"}))
    c = client(fake)
    cond = [{"field": "price_up", "operator": "<", "value": np.float64(0.4)}]
    c.replay("m", "UP", cond, cond, np.int64(10), latency_ms=np.int32(250), post_only=np.bool_(False))
    body = fake.bodies[-1]
    assert body["positionSize"] == 10 and body["latencyMs"] == 250 and body["postOnly"] is False
    c.sweep({"side": "UP", "positionSize": np.int64(10)},
            [{"path": "/entryConditions/0/value", "values": np.array([0.3, 0.4, 0.5])}],
            {"coin": "BTC", "market_type": "15m", "count": np.int64(5)}, wait=False)
    body = fake.bodies[-1]
    assert body["parameters"][0]["values"] == [0.3, 0.4, 0.5] and body["markets"]["count"] == 5
    assert body["strategy"]["positionSize"] == 10
    with pytest.raises(TypeError, match="datetime64"):
        c.replay("m", "UP", [{"field": "price_up", "operator": "<", "value": np.datetime64("2026-04-29")}], cond, 10)


def test_a_sweeps_times_are_utc_datetimes():
    # Every other time the client answers is an aware UTC datetime; a
    # sweep's created_at and finished_at were left in raw as strings.
    s = updown.Sweep.from_json({"sweep_id": "s1", "status": "DONE", "created_at": "2026-04-29T13:00:00.123Z",
                                "finished_at": "2026-04-29T13:02:30.5Z"})
    assert s.created_at.isoformat() == "2026-04-29T13:00:00.123000+00:00"
    assert (s.finished_at - s.created_at).total_seconds() == 150.377
    running = updown.Sweep.from_json({"sweep_id": "s2", "status": "RUNNING", "created_at": "2026-04-29T13:00:00Z",
                                      "finished_at": None})
    assert running.finished_at is None and running.created_at.tzinfo is not None


def test_trades_and_depth_parquet_walk_the_cursor_header(fake):
    # The API answers a market's trades and depth history in Parquet too
    # (DESIGN 13), its cursor in X-Next-Cursor and a window's cut in
    # X-Warning; the client read Parquet of snapshots alone.
    fake.on("GET", "/v1/markets/by-market-id/95786144/trades",
            (200, {"Content-Type": "application/vnd.apache.parquet", "X-Next-Cursor": "t1", "X-Total-Count": "3"}, b"PAR1 a PAR1"),
            (200, {"Content-Type": "application/vnd.apache.parquet", "X-Total-Count": "3"}, b"PAR1 b PAR1"))
    c = client(fake)
    assert list(c.iter_market_trades_parquet(market_id="95786144", start=1777467600000, limit=2)) == [b"PAR1 a PAR1", b"PAR1 b PAR1"]
    queries = [p for _, p, _ in fake.seen]
    assert "start_time=1777467600000" in queries[1] and "cursor=t1" in queries[1] and "offset" not in queries[1]
    assert fake.seen and all("order=asc" in q for q in queries)
    cut = "start_time is before the PRO plan's 31-day window of exchange history"
    fake.on("GET", "/v1/btc/future/snapshots",
            (200, {"Content-Type": "application/vnd.apache.parquet", "X-Next-Cursor": "d1", "X-Warning": cut}, b"PAR1 c PAR1"),
            (200, {"Content-Type": "application/vnd.apache.parquet", "X-Warning": cut}, b"PAR1 d PAR1"))
    with pytest.warns(updown.DataWindowWarning, match="31-day window") as w:
        assert len(list(c.iter_depth_parquet("futures", start=0))) == 2
    assert len(w) == 1
    assert c.depth_parquet("future", limit=5) == b"PAR1 d PAR1"
    assert c.market_trades_parquet(market_id="95786144") == b"PAR1 b PAR1"
    with pytest.raises(ValueError, match="order"):
        c.iter_depth_parquet(order="newest")


@pytest.mark.parametrize("status", [503, 429])
def test_an_error_answer_cut_short_is_retried(fake, status):
    # A 5xx or 429 whose body is cut short (a proxy or the server gone
    # mid-answer) is retried as any other, not raised as http.client's
    # IncompleteRead from inside the client.
    fake.on("GET", "/v1/markets/m",
            (status, {"Content-Length": "1000"}, err("SERVICE_UNAVAILABLE")),
            (200, {}, MARKET))
    assert client(fake).market("m").slug == "btc-updown-15m-1"
    assert fake.count("/v1/markets/m") == 2


def test_an_error_answer_cut_short_is_an_updown_error(fake):
    # Not retried (a 400), it is still the client's own error, with its status.
    fake.on("GET", "/v1/markets/m", (400, {"Content-Length": "1000"}, err("VALIDATION_ERROR", "bad")))
    with pytest.raises(updown.UpdownError) as e:
        client(fake).market("m")
    assert e.value.status == 400
    assert fake.count("/v1/markets/m") == 1


def test_a_sweeps_request_has_its_times_as_datetimes():
    # Sweep.request: the sweep's body as the API answers it, its markets'
    # times UTC datetimes as every time the client answers; raw keeps the
    # strings, and a sweep without one (as sweeps() lists it) has None.
    req = {"strategy": {"side": "UP"}, "parameters": [{"path": "/positionSize", "values": [1, 2]}],
           "search": {"kind": "GRID"}, "objective": "total_pnl", "split": {"kind": "NONE"},
           "markets": {"coin": "BTC", "market_type": "15m", "count": 5, "start_time": "2026-04-29T13:00:00Z",
                       "end_time": "2026-04-30T00:00:00.5Z"}}
    s = updown.Sweep.from_json({"sweep_id": "s1", "status": "DONE", "request": req})
    assert s.request["markets"]["start_time"] == datetime(2026, 4, 29, 13, tzinfo=timezone.utc)
    assert s.request["markets"]["end_time"] == datetime(2026, 4, 30, 0, 0, 0, 500000, tzinfo=timezone.utc)
    assert s.request["parameters"] == req["parameters"] and s.request["strategy"] == {"side": "UP"}
    assert s.raw["request"]["markets"]["start_time"] == "2026-04-29T13:00:00Z"
    assert updown.Sweep.from_json({"sweep_id": "s2", "status": "RUNNING"}).request is None


def test_a_sweeps_request_is_sent_again_as_it_was(fake):
    # sweep(**s.request) sends the body the sweep ran with: its times as
    # RFC 3339 again.
    req = {"strategy": {"side": "UP"}, "parameters": [{"path": "/positionSize", "values": [1, 2]}],
           "search": {"kind": "RANDOM", "trials": 1, "seed": 7}, "objective": "sqn",
           "split": {"kind": "HOLDOUT", "testFraction": 0.3, "embargoMarkets": 1},
           "markets": {"coin": "BTC", "market_type": "15m", "count": 5, "start_time": "2026-04-29T13:00:00Z"}}
    state = {"sweep_id": "s1", "status": "QUEUED", "trials": 1, "markets": 1, "replays": 1, "progress": {},
             "request": req}
    fake.on("POST", "/v1/sweeps", (202, {}, {"success": True, "data": state, "timestamp": "2026-04-29T13:00:00Z"}))
    c = client(fake)
    s = c.sweep(**updown.Sweep.from_json(state).request, wait=False)
    assert fake.bodies[-1] == req and s.request["search"]["seed"] == 7


def test_csv_pages_walk_the_cursor_header(fake):
    # The API answers snapshot and trade pages, depth history and a sweep's
    # trials as CSV (Accept: text/csv); the client had no method for it.
    csv_ = {"Content-Type": "text/csv"}
    fake.on("GET", "/v1/markets/m/snapshots",
            (200, dict(csv_, **{"X-Next-Cursor": "c1", "X-Total-Count": "3"}), b"slug,time\nm,2026-04-29T13:00:00Z\n"),
            (200, dict(csv_, **{"X-Total-Count": "3"}), b"slug,time\nm,2026-04-29T13:00:01Z\n"))
    c = client(fake)
    pages = list(c.iter_snapshots_csv("m", start=1777467600000, limit=1, include_orderbook=True))
    assert pages == ["slug,time\nm,2026-04-29T13:00:00Z\n", "slug,time\nm,2026-04-29T13:00:01Z\n"]
    queries = [p for _, p, _ in fake.seen]
    assert "cursor=c1" in queries[1] and "cursor" not in queries[0] and "offset" not in queries[1]
    assert all("include_orderbook=true" in q and "order=asc" in q and "start_time=1777467600000" in q for q in queries)
    fake.on("GET", "/v1/markets/by-market-id/9/trades", (200, csv_, "slug,outcome\nm,Up\n".encode()))
    assert c.market_trades_csv(market_id="9", limit=5) == "slug,outcome\nm,Up\n"
    assert list(c.iter_market_trades_csv(market_id="9")) == ["slug,outcome\nm,Up\n"]
    cut = "start_time is before the PRO plan's 31-day window of exchange history"
    fake.on("GET", "/v1/btc/future/snapshots",
            (200, dict(csv_, **{"X-Next-Cursor": "d1", "X-Warning": cut}), b"symbol\nBTCUSDT\n"),
            (200, dict(csv_, **{"X-Warning": cut}), b"symbol\nBTCUSDT\n"))
    with pytest.warns(updown.DataWindowWarning, match="31-day window") as w:
        assert len(list(c.iter_depth_csv("futures", start=0))) == 2
    assert len(w) == 1
    assert c.depth_csv("future", limit=5) == "symbol\nBTCUSDT\n"
    fake.on("GET", "/v1/sweeps/s1/trials", (200, csv_, b"trial,train.total_pnl\n0,1.5\n"))
    assert c.sweep_trials_csv("s1", limit=2, offset=1) == "trial,train.total_pnl\n0,1.5\n"
    assert "limit=2&offset=1" in fake.seen[-1][1]
    with pytest.raises(ValueError, match="order"):
        c.iter_depth_csv(order="newest")


def test_single_parquet_and_csv_pages_carry_their_paging(fake):
    # A JSON page has its next_cursor, total, matched and warning; a
    # Parquet or CSV page carries them as headers, which the walks followed
    # and the single-page methods dropped: they answered the body alone.
    # Still bytes and str, now with the page's fields as attributes.
    par, csv_ = {"Content-Type": "application/vnd.apache.parquet"}, {"Content-Type": "text/csv"}
    paged = {"X-Next-Cursor": "c1", "X-Total-Count": "400", "X-Matched-Count": "120"}
    fake.on("GET", "/v1/markets/m/snapshots", (200, dict(par, **paged), b"PAR1 s PAR1"), (200, dict(csv_, **paged), b"slug\nm\n"))
    fake.on("GET", "/v1/markets/m/trades", (200, dict(par, **paged), b"PAR1 t PAR1"), (200, dict(csv_, **paged), b"slug\nm\n"))
    c = client(fake)
    for page, body in ((c.snapshots_parquet("m", limit=2), b"PAR1 s PAR1"), (c.snapshots_csv("m", limit=2), "slug\nm\n"),
                       (c.market_trades_parquet("m", limit=2), b"PAR1 t PAR1"), (c.market_trades_csv("m", limit=2), "slug\nm\n")):
        assert page == body and isinstance(page, type(body))
        assert (page.next_cursor, page.total, page.matched, page.warning) == ("c1", 400, 120, None)
    fake.on("GET", "/v1/markets/m/snapshots", (200, dict(par, **paged), b"PAR1 s PAR1"), (200, dict(csv_, **paged), b"slug\nm\n"))
    assert isinstance(c.snapshots_parquet("m"), updown.ParquetPage) and isinstance(c.snapshots_csv("m"), updown.CSVPage)

    cut = "start_time is before the PRO plan's 31-day window of exchange history"
    last = {"X-Total-Count": "7", "X-Warning": cut}  # the last page: no cursor; depth has no matched
    fake.on("GET", "/v1/btc/spot/snapshots", (200, dict(par, **last), b"PAR1 d PAR1"), (200, dict(csv_, **last), b"symbol\n"))
    for page in (c.depth_parquet("spot"), c.depth_csv("spot")):
        assert (page.next_cursor, page.total, page.matched, page.warning) == (None, 7, None, cut)
    fake.on("GET", "/v1/sweeps/s1/trials", (200, dict(par, **{"X-Total-Count": "3"}), b"PAR1 w PAR1"),
            (200, dict(csv_, **{"X-Total-Count": "3"}), b"trial\n0\n"))
    for page in (c.sweep_trials_parquet("s1", limit=1), c.sweep_trials_csv("s1", limit=1)):
        assert (page.next_cursor, page.total, page.matched) == (None, 3, None)

    # A walk's pages are the same pages.
    fake.on("GET", "/v1/markets/m/snapshots", (200, dict(csv_, **paged), b"slug\nm\n"),
            (200, dict(csv_, **{"X-Total-Count": "400", "X-Matched-Count": "120"}), b"slug\nn\n"))
    pages = list(c.iter_snapshots_csv("m", limit=60))
    assert [(p.next_cursor, p.total, p.matched) for p in pages] == [("c1", 400, 120), (None, 400, 120)]


def test_csv_that_is_not_csv_says_so(fake):
    # An answer of another type (JSON from a server that has no CSV form
    # of the route, a proxy's text) is no CSV page: raised, not returned
    # as if it were one.
    fake.on("GET", "/v1/markets/m/snapshots", (200, {}, {"market": {}, "snapshots": []}))
    with pytest.raises(updown.UpdownError, match="not the API's"):
        client(fake).snapshots_csv("m")
    with pytest.raises(updown.UpdownError, match="not the API's"):
        list(client(fake).iter_snapshots_csv("m"))
    fake.on("GET", "/v1/markets/m/trades", (404, {}, err("RESOURCE_NOT_FOUND", "market m not found")))
    with pytest.raises(updown.NotFoundError, match="market m not found"):
        client(fake).market_trades_csv("m")


def test_parquet_that_is_not_parquet_says_so(fake):
    # The API answers JSON to an Accept it has no form of (a route without
    # Parquet, a server older than the client), as a proxy may answer its
    # own text. The Parquet methods returned such an answer as the page's
    # bytes, a "Parquet file" of JSON, and a walk ended after it without a
    # word, as the answer had no X-Next-Cursor; the CSV methods raised.
    page = {"market": MARKET, "snapshots": [], "total": 2000, "matched": 2000, "limit": 1000, "offset": 0,
            "next_cursor": "c1"}
    fake.on("GET", "/v1/markets/m/snapshots", (200, {}, page))
    fake.on("GET", "/v1/markets/m/trades", (200, {"Content-Type": "text/plain"}, b"upstream says no"))
    fake.on("GET", "/v1/btc/spot/snapshots", (200, {"Content-Type": "text/csv"}, b"symbol\n"))
    fake.on("GET", "/v1/sweeps/s1/trials", (200, {}, {"success": True, "data": {"trials": []}}))
    c = client(fake)
    for call in (lambda: c.snapshots_parquet("m"), lambda: list(c.iter_snapshots_parquet("m")),
                 lambda: c.market_trades_parquet("m"), lambda: list(c.iter_market_trades_parquet("m")),
                 lambda: c.depth_parquet("spot"), lambda: list(c.iter_depth_parquet("spot")),
                 lambda: c.sweep_trials_parquet("s1")):
        with pytest.raises(updown.UpdownError, match="not the API's answer") as e:
            call()
        assert e.value.status == 200
    with pytest.raises(updown.UpdownError, match="application/json"):
        c.snapshots_parquet("m")
    # An error answer is still the API's error, whatever was asked for.
    fake.on("GET", "/v1/markets/m/snapshots", (404, {}, err("RESOURCE_NOT_FOUND", "market m not found")))
    with pytest.raises(updown.NotFoundError, match="market m not found"):
        c.snapshots_parquet("m")


def test_answers_are_asked_for_and_read_gzipped(fake):
    # The API compresses its answers when asked (a page of snapshots with
    # books to about a fifth); the client never asked, so every page came
    # whole over the wire. Each kind of answer, the error's too, is read
    # as it was before its compression.
    import gzip
    import json
    gz = {"Content-Encoding": "gzip"}
    fake.on("GET", "/v1/markets/m", (200, gz, gzip.compress(json.dumps(MARKET).encode())))
    fake.on("GET", "/v1/markets/m/snapshots",
            (200, dict(gz, **{"Content-Type": "application/vnd.apache.parquet", "X-Total-Count": "1"}), gzip.compress(b"PAR1 p PAR1")),
            (200, dict(gz, **{"Content-Type": "text/csv"}), gzip.compress(b"slug,time\nm,t\n")))
    fake.on("GET", "/v1/markets/n", (404, gz, gzip.compress(json.dumps(err("RESOURCE_NOT_FOUND", "market n not found")).encode())))
    c = client(fake)
    assert c.market("m").slug == MARKET["slug"]
    page = c.snapshots_parquet("m")
    assert page == b"PAR1 p PAR1" and page.total == 1
    assert c.snapshots_csv("m") == "slug,time\nm,t\n"
    with pytest.raises(updown.NotFoundError, match="market n not found"):
        c.market("n")
    assert all(h.get("Accept-Encoding") == "gzip" for h in fake.headers) and len(fake.headers) == 4

    # A gzip body cut short (before the server sent it) is an answer cut
    # short: read again, not a "not the API's answer" of its bytes.
    whole = gzip.compress(json.dumps(MARKET).encode())
    fake.on("GET", "/v1/markets/m", (200, gz, whole[:len(whole) // 2]), (200, gz, whole))
    assert c.market("m").slug == MARKET["slug"] and fake.count("/v1/markets/m") == 3


def test_a_market_walk_that_stops_short_of_the_window_does_not_warn(fake):
    # Markets are listed newest first, and the plan's window hides the
    # oldest: a walk that stops at its limit before the list's end has
    # every market it asked for. It warned all the same (with
    # simplefilter("error"), as the README suggests, all_markets(limit=10)
    # of a Starter raised); a walk that reaches the end warns, once.
    cut = "11 older market(s) matching this filter are outside the STARTER plan's data window"
    page = lambda n, off: (200, {}, {"markets": [dict(MARKET, slug=f"btc-updown-15m-{off + i}") for i in range(n)],  # noqa: E731
                                     "total": 3, "limit": n, "offset": off, "warning": cut})
    fake.on("GET", "/v1/markets", page(2, 0), page(1, 2))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(client(fake).all_markets("BTC", limit=2)) == 2
        assert [m.slug for m in client(fake).iter_markets("BTC", limit=1, offset=2)] == ["btc-updown-15m-2"]
    fake.on("GET", "/v1/markets", page(2, 0), page(1, 2))
    with pytest.warns(updown.DataWindowWarning, match="outside the STARTER") as w:
        assert len(client(fake).all_markets("BTC", limit=5)) == 3
    assert len(w) == 1


def test_iter_sweeps_walks_every_page(fake):
    # sweeps() answers one page (20 by default) and drops the page's total:
    # nothing said whether more sweeps were listed. iter_sweeps() walks to
    # the end, each sweep once although one started meanwhile (the list is
    # newest first) pushes the last of a page onto the next.
    def sw(i):
        return {"sweep_id": f"s{i}", "status": "DONE", "trials": 1, "markets": 1, "replays": 1, "progress": {},
                "created_at": "2026-04-29T13:00:00Z", "finished_at": None, "error": None}

    def page(ids, total, off):
        return (200, {}, {"success": True, "data": {"sweeps": [sw(i) for i in ids], "total": total, "limit": 100,
                                                    "offset": off}, "timestamp": "2026-04-29T13:00:00Z"})
    # s6 starts after the first page: s4 comes again on the second.
    fake.on("GET", "/v1/sweeps", page([5, 4], 6, 0), page([4, 3], 7, 2), page([2, 1], 7, 4), page([0], 7, 6))
    got = list(client(fake).iter_sweeps(page_size=2))
    assert [s.sweep_id for s in got] == ["s5", "s4", "s3", "s2", "s1", "s0"]
    assert all(isinstance(s, updown.Sweep) for s in got)
    assert [p.split("?")[1] for _, p, _ in fake.seen] == [f"limit=2&offset={o}" for o in (0, 2, 4, 6)]
    fake.on("GET", "/v1/sweeps", page([], 0, 0))
    assert list(client(fake).iter_sweeps()) == []


def test_sweep_trials_page_says_its_total(fake):
    # sweep_trials() answered the page's trials alone, where its Parquet and
    # CSV pages carry the sweep's total: nothing said how many pages more.
    trials = [{"trial": 1, "parameters": [{"path": "/positionSize", "value": 20}]},
              {"trial": 2, "parameters": [{"path": "/positionSize", "value": 30}]}]
    fake.on("GET", "/v1/sweeps/s1/trials", (200, {}, {"success": True, "data": {
        "sweep_id": "s1", "trials": trials, "total": 5, "limit": 2, "offset": 1}, "timestamp": "2026-04-29T13:00:00Z"}))
    page = client(fake).sweep_trials("s1", limit=2, offset=1)
    assert isinstance(page, list) and isinstance(page, updown.TrialList) and page == trials
    assert (page.total, page.limit, page.offset) == (5, 2, 1)
    assert "limit=2&offset=1" in fake.seen[-1][1]


def test_latest_depth_says_when_it_was_taken(fake):
    # A collector that stopped hearing from Binance leaves its last depth
    # served with 200; the answer's Last-Modified is what says how old it
    # is, and the client must not drop it.
    from datetime import datetime, timezone
    fake.on("GET", "/v1/eth/future/latest",
            (200, {"Last-Modified": "Mon, 30 Nov 2026 17:04:05 GMT"},
             {"data": {"coin_price": 3420.17, "bids": [{"price": 3420.17, "quantity": 2.836}], "asks": []}}))
    d = client(fake).latest_depth("ETH", "futures")
    assert d.time == datetime(2026, 11, 30, 17, 4, 5, tzinfo=timezone.utc)
    assert d.coin_price == 3420.17 and d.bids[0].quantity == 2.836 and d.asks == []
    fake.on("GET", "/v1/btc/spot/latest", (200, {}, {"data": {"coin_price": 1.0, "bids": [], "asks": []}}))
    assert client(fake).latest_depth().time is None
