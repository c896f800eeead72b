package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// waitWorkers waits until n Asynq servers are registered in Redis.
func waitWorkers(t *testing.T, redisURL string, n int, procs ...*proc) {
	t.Helper()
	connOpt, err := asynq.ParseRedisURI(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(connOpt)
	defer insp.Close()
	deadline := time.Now().Add(patience)
	got := 0
	for time.Now().Before(deadline) {
		for _, p := range procs {
			select {
			case <-p.done:
				t.Fatalf("%s exited: %v\n%s", p.name, p.err, lastN(p.out.String(), 2000))
			default:
			}
		}
		servers, err := insp.Servers()
		if got = len(servers); err == nil && got == n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%d workers registered within %v, want %d", got, patience, n)
}

// TestWorkersShareTheDefaultOpsAddress: two workers started without an ops
// address of their own (the same PORT, no WORKER_ADDR) both run; the one
// that finds the address taken works without it and says so. An address
// given explicitly must still be had.
func TestWorkersShareTheDefaultOpsAddress(t *testing.T) {
	t.Parallel()
	s := services{dbURL: pgtest.NewDatabase(t), redisURL: redistest.New(t)}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	env := s.environ("WORKER_ADDR=", "PORT="+port)
	first := startProc(t, "worker 1", env, "worker")
	waitHealthy(t, "http://"+addr)
	second := startProc(t, "worker 2", env, "worker")
	waitWorkers(t, s.redisURL, 2, first, second)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(second.out.String(), "worker ops address taken") {
		if time.Now().After(deadline) {
			t.Fatalf("the second worker does not say its ops address is taken:\n%s", second.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	explicit := startProc(t, "worker 3", s.environ("WORKER_ADDR="+addr), "worker")
	if err := explicit.wait(t, 30*time.Second); err == nil || !strings.Contains(explicit.out.String(), "address already in use") {
		t.Errorf("a worker given a taken WORKER_ADDR: %v\n%s", err, explicit.out.String())
	}
}

// TestProcfileScales runs the repository's Procfile under foreman, as the
// README shows, with four workers: every process runs (bin/updown is
// found, the workers' ops addresses do not collide), each worker answers
// on the port foreman gave it, and a replay goes through.
func TestProcfileScales(t *testing.T) {
	foreman, err := exec.LookPath("foreman")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("foreman is required under CI=true (.ci/run installs ruby-foreman)")
		}
		t.Skip("foreman is not installed (apt-get install ruby-foreman)")
	}
	s := services{dbURL: pgtest.NewDatabase(t), redisURL: redistest.New(t)}
	slugs := seedMarkets(t, s.dbURL, store.M15)
	key := createKey(t, s.dbURL, "procfile@example.com", store.Enterprise)

	// The app as a Procfile runner sees it: the Procfile and bin/updown
	// (make build), nothing on PATH.
	root := t.TempDir()
	procfile, err := os.ReadFile("../../Procfile")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "Procfile"), procfile, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(updownBinary(t), filepath.Join(root, "bin", "updown")); err != nil {
		t.Fatal(err)
	}
	base := freePortRange(t, 200)
	cmd := exec.Command(foreman, "start", "--no-timestamp", "-d", root, "-f", filepath.Join(root, "Procfile"),
		"-m", "web=1,worker=4,collector=0", "-p", fmt.Sprint(base))
	env := []string{}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "PORT" && k != "WORKER_ADDR" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "DATABASE_URL="+s.dbURL, "REDIS_URL="+s.redisURL, "TOKEN_SECRET="+testTokenSecret,
		"WEBHOOK_SECRET="+testWebhookSecret, "AI_PROVIDER=builtin")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // foreman and every process it started
		if t.Failed() {
			t.Logf("foreman's output:\n%s", lastN(out.String(), 6000))
		}
	})

	web := fmt.Sprintf("http://127.0.0.1:%d", base)
	waitHealthy(t, web)
	waitWorkers(t, s.redisURL, 4)
	for i := range 4 { // foreman gives worker.N the port base+100+N-1
		waitHealthy(t, fmt.Sprintf("http://127.0.0.1:%d", base+100+i))
	}
	if a := do(nil, http.MethodPost, web+"/v1/replay", key, replayBody(slugs[store.M15], 3)); a.status != http.StatusOK {
		t.Errorf("replay through the Procfile's processes: %v", a)
	}
	if strings.Contains(out.String(), "not found") || strings.Contains(out.String(), "address already in use") {
		t.Errorf("a process failed to start:\n%s", out.String())
	}

	// foreman passes SIGTERM on; every process stops gracefully.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ended(t, "foreman's stop on SIGTERM", done)
	for _, p := range []string{"web.1", "worker.1", "worker.2", "worker.3", "worker.4"} {
		if !strings.Contains(out.String(), p) {
			t.Errorf("no output from %s", p)
		}
	}
}

// freePortRange finds a base port with base, base+100 ... base+103 free on
// loopback, for a Procfile runner's port numbering (web, then worker.1-4).
func freePortRange(t *testing.T, span int) int {
	t.Helper()
	for range 50 {
		// Below the ephemeral range, where no outgoing connection takes a
		// port (see freeAddr).
		base := 10000 + int(time.Now().UnixNano()%int64(ephemeralLow()-span-10000))
		free := true
		for _, off := range []int{0, 100, 101, 102, 103} {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

// readmeForemanCommands are the `foreman start` command lines README.md
// gives, each without its trailing comment or closing backtick.
func readmeForemanCommands(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for line := range strings.SplitSeq(string(readme), "\n") {
		for {
			i := strings.Index(line, "foreman start")
			if i < 0 {
				break
			}
			line = line[i:]
			end := len(line)
			for _, stop := range []string{"`", " #"} {
				if j := strings.Index(line, stop); j >= 0 && j < end {
					end = j
				}
			}
			cmds = append(cmds, strings.TrimSpace(line[:end]))
			line = line[end:]
		}
	}
	if len(cmds) == 0 {
		t.Fatal("README.md gives no `foreman start` command: has this test stopped finding them?")
	}
	return cmds
}

// foremanFlag is the value of a foreman flag (short or long form) in cmd,
// "" when it is not given.
func foremanFlag(cmd, short, long string) string {
	fields := strings.Fields(cmd)
	for i, f := range fields {
		if v, ok := strings.CutPrefix(f, long+"="); ok {
			return v
		}
		if (f == short || f == long) && i+1 < len(fields) {
			return fields[i+1]
		}
	}
	return ""
}

// TestReadmeForemanWaitsForGracefulShutdown: every `foreman start` the
// README gives lets the processes stop as they promise to. foreman sends
// SIGTERM and, after its --timeout (5 s unless given), SIGKILL: at 5 s the
// api's grace for requests in flight (a request waiting on its job answers
// 504 with the job's id near its end) and the workers' SHUTDOWN_TIMEOUT were
// cut off, the waiting request losing its connection with no answer.
func TestReadmeForemanWaitsForGracefulShutdown(t *testing.T) {
	t.Parallel()
	need := max(shutdownGrace, defaultShutdownTimeout)
	for _, cmd := range readmeForemanCommands(t) {
		v := foremanFlag(cmd, "-t", "--timeout")
		secs, err := strconv.Atoi(v)
		if err != nil || time.Duration(secs)*time.Second <= need {
			t.Errorf("README: %q: give foreman a --timeout (-t) over %v, the processes' graceful shutdown; it has %q (foreman's default: 5 s)", cmd, need, v)
		}
	}
}

// TestReadmeForemanRunsTheAPI: every `foreman start` the README gives
// starts the api. A formation (-m) names every process type that runs:
// `-m worker=2` started two workers and nothing else, no api to send
// them work.
func TestReadmeForemanRunsTheAPI(t *testing.T) {
	t.Parallel()
	for _, cmd := range readmeForemanCommands(t) {
		counts := map[string]string{}
		for kv := range strings.SplitSeq(foremanFlag(cmd, "-m", "--formation"), ",") {
			name, n, _ := strings.Cut(kv, "=")
			counts[name] = n
		}
		web, set := counts["web"]
		if !set {
			web = counts["all"]
		}
		if foremanFlag(cmd, "-m", "--formation") != "" && (web == "" || web == "0") {
			t.Errorf("README: %q starts no web process (the api): a formation runs only the process types it names (or all=N)", cmd)
		}
	}
}
