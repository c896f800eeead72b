package main

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// The dashboard following a job past the server's wait (SPEC 7: a 504
// JOB_TIMEOUT names the job, GET /v1/jobs/{id} answers it). The tests run
// `updown api` on Postgres and Redis with no worker at first: the replay
// the page sends cannot finish within the wait, however fast or busy the
// machine, so the 504 is certain; the test starts a worker once the page is
// seen following the job, and the job's result must then reach the screen.
// (They used `updown dev` with JOB_WAIT=1ms, and counted on the replay
// being slower than a millisecond: one that beat it was a replay followed
// by nobody, which one test ran again up to 20 times and the other passed
// without following anything.)

// jobPollStack is `updown api` without a worker, a PRO customer of its
// own and a resolved BTC 15m market with snapshots.
func jobPollStack(t *testing.T) (s services, base, slug string) {
	t.Helper()
	updownBinary(t)
	dbURL := pgtest.NewDatabase(t)
	rd := redistest.Start(t)
	slug = seedMarkets(t, dbURL, store.M15)[store.M15]
	s = services{dbURL: dbURL, redisURL: rd.URL, key: createKey(t, dbURL, "jobpoll@example.com", store.Pro)}
	_, base = startAPI(t, s, "JOB_WAIT=1s")
	return s, base, slug
}

// countJobAnswers counts the answers to the page's GET /v1/jobs/{id} by
// their status.
func countJobAnswers(b *browserSession) (count func(status int) int32) {
	var running, other atomic.Int32
	chromedp.ListenTarget(b.ctx, func(ev any) {
		e, ok := ev.(*network.EventResponseReceived)
		if !ok || !strings.Contains(e.Response.URL, "/v1/jobs/") {
			return
		}
		if e.Response.Status == http.StatusAccepted {
			running.Add(1)
		} else {
			other.Add(1)
		}
	})
	b.run("watch the network", network.Enable())
	return func(status int) int32 {
		if status == http.StatusAccepted {
			return running.Load()
		}
		return other.Load()
	}
}

// waitFollowing waits until ok says the page follows its job, failing at
// once when the page shows an error instead (a dead end).
func waitFollowing(t *testing.T, b *browserSession, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patience); !ok(); time.Sleep(50 * time.Millisecond) {
		var banner string
		b.eval(`(document.querySelector('[data-testid=error-banner]') || {}).textContent || ''`, &banner)
		if banner != "" {
			t.Fatalf("%s: the page shows the error %q instead", what, banner)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened (gave up after %v, a hang guard)", what, patience)
		}
	}
}

// replayOutcome waits for the replay's result (run n) or an error banner.
func replayOutcome(t *testing.T, b *browserSession) string {
	t.Helper()
	var outcome string
	b.run("the replay's outcome", chromedp.Poll(`(() => {
			if (document.querySelector('[data-testid=replay-results][data-run="1"] [data-testid=replay-total-pnl]')) return 'result';
			const e = (document.querySelector('[data-testid=error-banner]') || {}).textContent || '';
			return e ? 'error banner: ' + e : null })()`, &outcome, chromedp.WithPollingTimeout(patience)))
	return outcome
}

// TestDashboardFollowsSlowJobs: a replay that outlasts the server's wait
// answers 504 JOB_TIMEOUT with its job id; the dashboard follows the job
// (GET /v1/jobs/{id}) and shows its result, as SPEC 7 tells a client to,
// instead of a dead end.
func TestDashboardFollowsSlowJobs(t *testing.T) {
	t.Parallel()
	s, base, slug := jobPollStack(t)
	b := open(t, base)
	defer b.close()
	b.signIn(s.key)
	b.visit("#/replay?market="+url.QueryEscape(slug), "replay")
	answers := countJobAnswers(b)
	b.run("run a replay", chromedp.Click(byID("replay-submit")))
	// No worker: the job is still queued when the page asks for it.
	waitFollowing(t, b, "the page following its job after the 504", func() bool { return answers(http.StatusAccepted) > 0 })
	if n := answers(0); n != 0 {
		t.Fatalf("before any worker ran, %d answers to the page's polls said other than 202", n)
	}
	startWorker(t, s, "worker")
	if outcome := replayOutcome(t, b); outcome != "result" {
		t.Fatalf("a replay answered 504 JOB_TIMEOUT: %s, want its result fetched from GET /v1/jobs/{id}", outcome)
	}
	if trades := b.text(byID("replay-total-trades")); trades == "" {
		t.Errorf("no trades figure shown after the job was followed")
	}
}

// TestDashboardFollowsAJobPastARefusedPoll: a poll of GET /v1/jobs/{id}
// that the server refuses (429 over the rate limit, 503 while it is away
// behind its proxy) is asked again, after its Retry-After, as SPEC 7 tells
// clients to; the job goes on meanwhile. QA: the dashboard stopped
// following at the first such answer and showed the rate limit's error in
// place of the replay's result, which the job went on to produce.
func TestDashboardFollowsAJobPastARefusedPoll(t *testing.T) {
	t.Parallel()
	s, base, slug := jobPollStack(t)
	b := open(t, base)
	defer b.close()
	b.signIn(s.key)
	b.visit("#/replay?market="+url.QueryEscape(slug), "replay")

	// The first polls are refused, one of each; the rest reach the server.
	refusals := []struct {
		status int64
		body   string
	}{
		{429, `{"success":false,"error":{"code":"RATE_LIMIT_EXCEEDED","message":"rate limit exceeded: the PRO plan allows 300 requests per minute; retry in 1 s"},"timestamp":"2026-11-29T00:00:00Z"}`},
		{503, `{"success":false,"error":{"code":"SERVICE_UNAVAILABLE","message":"the service is unavailable"},"timestamp":"2026-11-29T00:00:00Z"}`},
	}
	var polls atomic.Int32
	defer b.answerBy("*/v1/jobs/*", "/v1/jobs/", func(string) (int64, []byte, bool) {
		n := int(polls.Add(1)) - 1
		if n >= len(refusals) {
			return 0, nil, false
		}
		return refusals[n].status, []byte(refusals[n].body), true
	}, &fetch.HeaderEntry{Name: "Retry-After", Value: "1"})()
	answers := countJobAnswers(b)

	b.run("run a replay", chromedp.Click(byID("replay-submit")))
	// Past both refusals the page asks the server, which says the job,
	// with no worker yet, is still queued.
	waitFollowing(t, b, "the page asking again past the refused polls", func() bool { return answers(http.StatusAccepted) > 0 })
	if n := polls.Load(); n <= int32(len(refusals)) {
		t.Fatalf("the server answered a poll after %d polls; want past the %d refused", n, len(refusals))
	}
	startWorker(t, s, "worker")
	if outcome := replayOutcome(t, b); outcome != "result" {
		t.Fatalf("a replay whose job's polls were refused (429, then 503) shows %s; want its result", outcome)
	}
}
