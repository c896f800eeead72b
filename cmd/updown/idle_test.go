//go:build linux

package main

import (
	"testing"
	"time"

	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// BenchmarkIdleCPU measures what processes at rest cost (issue 16 item 13,
// DESIGN 3): the CPU an idle `updown dev` and an idle `updown worker` (on
// Postgres and a real Redis) use per second of wall time, in percent of one
// core, read from /proc over a quiet stretch after start-up.
func BenchmarkIdleCPU(b *testing.B) {
	const quiet = 20 * time.Second
	b.Run("dev", func(b *testing.B) {
		addr := freeAddr(b)
		p := startProc(b, "dev", []string{"LOG_LEVEL=warn"}, "dev", "--addr", addr)
		waitUp(b, p, "http://"+addr)
		b.ReportMetric(idleCPU(b, p, quiet), "%core")
	})
	b.Run("worker", func(b *testing.B) {
		s := services{dbURL: pgtest.NewDatabase(b), redisURL: redistest.Start(b).URL}
		b.Setenv("DATABASE_URL", s.dbURL)
		runCmd(b, "migrate")
		p := startWorker(b, s, "worker")
		b.ReportMetric(idleCPU(b, p, quiet), "%core")
	})
}

// idleCPU lets a started process settle, then returns the CPU it used over
// d, in percent of one core.
func idleCPU(b *testing.B, p *proc, d time.Duration) float64 {
	b.Helper()
	time.Sleep(3 * time.Second) // start-up work done
	before := procCPU(b, p.cmd.Process.Pid)
	time.Sleep(d)
	used := procCPU(b, p.cmd.Process.Pid) - before
	b.ResetTimer()
	return 100 * used.Seconds() / d.Seconds()
}
