package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisLogEvery bounds how often one message of the Redis client is
// logged: while Redis is down every connection attempt fails alike.
const redisLogEvery = 30 * time.Second

// redisLog is the Redis client's logger (redis.SetLogger): what go-redis
// reports on its own (a pool that cannot dial, the master a Sentinel
// names) goes to the process's log/slog logger, as a warning with
// component "redis", instead of a plain "redis: 2026/…" line on stderr
// in the middle of the JSON log. A message repeated within
// redisLogEvery is held back and counted in the next one logged.
type redisLog struct {
	log   *slog.Logger
	every time.Duration

	now func() time.Time // time.Now when nil

	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

// routeRedisLog makes log the Redis client's logger for the process.
func routeRedisLog(log *slog.Logger) {
	redis.SetLogger(&redisLog{log: log.With("component", "redis"), every: redisLogEvery,
		last: map[string]time.Time{}, held: map[string]int{}})
}

func (l *redisLog) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimSpace(strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "))
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	l.mu.Lock()
	if last, ok := l.last[msg]; ok && now.Sub(last) < l.every {
		l.held[msg]++
		l.mu.Unlock()
		return
	}
	// Forget what has not come back within the period, so the maps stay
	// small; the repeats a message had held back are logged as it goes,
	// else they would be kept, and their message, for the process's life.
	type heldBack struct {
		msg string
		n   int
	}
	var gone []heldBack
	for m, t := range l.last {
		if m != msg && now.Sub(t) >= l.every {
			if n := l.held[m]; n > 0 {
				gone = append(gone, heldBack{m, n})
			}
			delete(l.last, m)
			delete(l.held, m)
		}
	}
	held := l.held[msg]
	l.last[msg], l.held[msg] = now, 0
	l.mu.Unlock()
	for _, g := range gone {
		l.log.Log(ctx, l.level(g.msg), "redis client", "detail", g.msg, "suppressed", g.n, "suppressed_over", l.every.String())
	}
	args := []any{"detail", msg}
	if held > 0 {
		args = append(args, "suppressed", held, "suppressed_over", l.every.String())
	}
	l.log.Log(ctx, l.level(msg), "redis client", args...)
}

// level is the level msg is logged at: a warning, but for the primary
// the sentinels name, which is news, not trouble.
func (l *redisLog) level(msg string) slog.Level {
	if strings.HasPrefix(msg, "sentinel: new master") || strings.HasPrefix(msg, "sentinel: selected") {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}
