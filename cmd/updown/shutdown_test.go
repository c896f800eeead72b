package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/updown/updown/jobs/collect"
	"github.com/updown/updown/jobs/collect/binancetest"
	"github.com/updown/updown/jobs/collect/polytest"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// warnLine is a log line at WARN or above, in the JSON or the text format.
var warnLine = regexp.MustCompile(`(?m)^.*(?:"level":"(?:WARN|ERROR)"|level=(?:WARN|ERROR)).*$`)

// stopCleanly signals p, which must exit 0 having logged no warning or
// error: a shutdown asked for is not a fault.
func stopCleanly(t *testing.T, p *proc, sig syscall.Signal) {
	t.Helper()
	stopExits0(t, p, sig)
	if w := warnLine.FindAllString(p.out.String(), -1); len(w) > 0 {
		t.Errorf("%s logged on a clean %v:\n%q", p.name, sig, w)
	}
}

// stopExits0 signals p, which must exit 0.
func stopExits0(t *testing.T, p *proc, sig syscall.Signal) {
	t.Helper()
	p.signal(t, sig)
	err := p.wait(t, patience)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Errorf("%s exited %d on %v, want 0", p.name, exit.ExitCode(), sig)
	case err != nil:
		t.Errorf("%s on %v: %v", p.name, sig, err)
	}
}

// TestCleanShutdown: each process, stopped by SIGTERM (or Ctrl-C, SIGINT,
// for `updown dev`, as `make run` is stopped), exits 0 and logs no
// warning.
func TestCleanShutdown(t *testing.T) {
	t.Parallel()
	updownBinary(t)
	dbURL := pgtest.NewDatabase(t)
	s := services{dbURL: dbURL}

	t.Run("worker", func(t *testing.T) {
		t.Parallel()
		s := s
		s.redisURL = redistest.Start(t).URL
		for i := range 3 { // the race it used to lose is a narrow one
			w := startWorker(t, s, "worker")
			w.waitOutput(t, "worker started", patience)
			stopCleanly(t, w, syscall.SIGTERM)
			if t.Failed() {
				t.Fatalf("run %d", i)
			}
		}
	})
	t.Run("api", func(t *testing.T) {
		t.Parallel()
		s := s
		s.redisURL = redistest.Start(t).URL
		p, _ := startAPI(t, s)
		stopCleanly(t, p, syscall.SIGTERM)
	})
	t.Run("collect", func(t *testing.T) {
		t.Parallel()
		s := s
		s.redisURL = redistest.Start(t).URL
		const length = 8 * time.Second
		scheme := collect.QuickScheme{Length: length}
		poly := polytest.New(t, polytest.Options{Scheme: scheme})
		bin := binancetest.New(t, binancetest.Options{})
		now := time.Now()
		poly.AddRange(collect.AllSeries(), now.Add(-length), now.Add(4*length))
		env := s.environ(collect.EnvGammaURL+"="+poly.URL, collect.EnvCLOBURL+"="+poly.URL, collect.EnvPolymarketWSURL+"="+poly.WSURL,
			collect.EnvPolymarketDataURL+"="+poly.URL, collect.EnvBinanceSpotURL+"="+bin.URL, collect.EnvBinanceFuturesURL+"="+bin.URL)
		p := startProc(t, "collect", env, "collect", "--quick-windows", length.String(), "--series", "btc:5m")
		p.waitOutput(t, "market discovered", patience)
		// Exit 0 only: the collector (jobs/collect) still warns of writes
		// its own cancellation broke off.
		stopExits0(t, p, syscall.SIGTERM)
	})
	// Stopped while it waits for the schema, before it is up: a service
	// stopped as asked all the same.
	t.Run("worker-waiting", func(t *testing.T) {
		t.Parallel()
		s := services{dbURL: pgtest.NewEmptyDatabase(t), redisURL: redistest.Start(t).URL}
		w := startWorker(t, s, "worker")
		w.waitOutput(t, "waiting for database schema", patience)
		stopCleanly(t, w, syscall.SIGTERM)
	})
	// Ctrl-C while dev generates its data (DATABASE_URL makes it say a
	// word first): a stop all the same.
	t.Run("dev-starting", func(t *testing.T) {
		t.Parallel()
		p := startProc(t, "dev", []string{"DATABASE_URL=postgres://127.0.0.1:1/unused"}, "dev", "--addr", "127.0.0.1:0")
		p.waitOutput(t, "DATABASE_URL is ignored", patience)
		stopCleanly(t, p, syscall.SIGINT)
	})
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run("dev-"+sig.String(), func(t *testing.T) {
			t.Parallel()
			p := startProc(t, "dev", nil, "dev", "--addr", "127.0.0.1:0", "--snapshots-per-market", "20", "--collect-every", "1s")
			p.waitOutput(t, "updown dev is up", patience)
			stopCleanly(t, p, sig)
		})
	}
}

// TestMakeRunStopsOnCtrlC runs the README's `make run` as a newcomer does,
// on embedded defaults, and presses Ctrl-C (SIGINT to the whole process
// group, as a terminal sends it): the service exits 0 and make reports no
// error. GNU make, interrupted, re-raises SIGINT on itself once its recipe
// has succeeded (the shell's 130, as for any program stopped by Ctrl-C),
// and exits 2 with "make: *** … Error N" when it failed, as it did under
// `go run`, which exits 1 when interrupted whatever the program does.
func TestMakeRunStopsOnCtrlC(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the README's make run cannot be tried without make, which .ci/run installs: under CI=true it must be there")
		}
		t.Skip("no make")
	}
	addr := freeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("make", "--no-print-directory", "run", "BIN="+filepath.Join(t.TempDir(), "updown"))
	cmd.Dir = filepath.Join("..", "..")
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "DATABASE_URL" && k != "REDIS_URL" && k != "PORT" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PORT="+port)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	waitHealthy(t, "http://"+addr)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		output := out.String()
		// GNU make's own race, whatever the recipe does: its SIGINT
		// handler waits for the child that its main loop, interrupted
		// as the child exited, has just reaped, finds none, and stops
		// with "wait: No child processes" (exit 2). A busy machine
		// opens the window (a CI run at load 26); the recipe's failure
		// that this test is for reads "[…run] Error N".
		if strings.Contains(output, "wait: No child processes") && !strings.Contains(output, "] Error") {
			t.Logf("GNU make lost the race of its SIGINT handler with its own wait; the recipe did not fail:\n%s", output)
			return
		}
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGINT) {
			t.Errorf("make run after Ctrl-C: %v, want it interrupted with its recipe done; its output:\n%s", err, output)
		}
		if strings.Contains(output, "make: ***") || strings.Contains(output, "make[1]: ***") {
			t.Errorf("make reports an error after Ctrl-C:\n%s", output)
		}
	case <-time.After(patience): // a hang guard, not a budget: Ctrl-C must stop it at all
		t.Fatalf("make run hung after Ctrl-C (gave up after %v); its output:\n%s", patience, out.String())
	}
}
