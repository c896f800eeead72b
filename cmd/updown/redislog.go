package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs/throttle"
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
	log      *slog.Logger
	throttle *throttle.Log
}

// routeRedisLog makes log the Redis client's logger for the process.
func routeRedisLog(log *slog.Logger) {
	redis.SetLogger(newRedisLog(log.With("component", "redis"), redisLogEvery, nil))
}

// newRedisLog is a redisLog writing to log, each message at most once per
// every by the clock now (time.Now when nil).
func newRedisLog(log *slog.Logger, every time.Duration, now func() time.Time) *redisLog {
	return &redisLog{log: log, throttle: throttle.New(every, now)}
}

func (l *redisLog) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimSpace(strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "))
	ok, held, gone := l.throttle.Allow(msg)
	every := l.throttle.Every().String()
	for _, g := range gone {
		l.log.Log(ctx, l.level(g.Key), "redis client", "detail", g.Key, "suppressed", g.N, "suppressed_over", every)
	}
	if !ok {
		return
	}
	args := []any{"detail", msg}
	if held > 0 {
		args = append(args, "suppressed", held, "suppressed_over", every)
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
