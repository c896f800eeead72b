// Package throttle holds back repeats of keyed events: a warning logged at
// most once per key and period, with the count of the repeats held back
// since, as the collector's warnings and the Redis client's log do. An
// upstream or a database that is down fails every request alike, and a
// log line per failure would bury everything else.
package throttle

import (
	"sync"
	"time"
)

// Log decides, key by key, which events go through. It is safe for
// concurrent use.
type Log struct {
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

// New is a Log that lets a key through at most once per every; now is the
// clock (time.Now when nil).
func New(every time.Duration, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{every: every, now: now, last: map[string]time.Time{}, held: map[string]int{}}
}

// Every is the period the Log holds repeats back over.
func (l *Log) Every() time.Duration { return l.every }

// Held is a key forgotten with the repeats it held back.
type Held struct {
	Key string
	N   int
}

// Allow reports whether an event of key goes through now, and if so how
// many of its repeats were held back since the last that did. gone lists
// the keys forgotten meanwhile (not seen for a period) that held repeats
// back: their counts are the caller's to log, else they would be lost.
// Forgetting keeps the Log small when keys come and go (a market each).
func (l *Log) Allow(key string) (ok bool, held int, gone []Held) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, seen := l.last[key]; seen && now.Sub(last) < l.every {
		l.held[key]++
		return false, 0, nil
	}
	for k, t := range l.last {
		if k != key && now.Sub(t) >= l.every {
			if n := l.held[k]; n > 0 {
				gone = append(gone, Held{Key: k, N: n})
			}
			delete(l.last, k)
			delete(l.held, k)
		}
	}
	held = l.held[key]
	l.last[key], l.held[key] = now, 0
	return true, held, gone
}
