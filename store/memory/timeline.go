package memory

import (
	"math"
	"slices"
	"sync"
)

// timeline is one time series (a market's snapshots, one symbol's depth)
// kept in time order, so that a page is a range of it, never a sort. Each
// row's payload is packed into an arena; rows hold only its place there,
// so the row slice holds no pointers for the garbage collector to scan.
type timeline struct {
	mu    sync.RWMutex
	rows  []row // ascending by micros, unique
	arena arena
}

type row struct {
	micros int64 // Unix microseconds
	data   span
}

// entry is a row in transit: its time and its packed payload.
type entry struct {
	micros int64
	data   []byte
}

// Unbounded time range ends for timeline.page.
const (
	minMicros = math.MinInt64
	maxMicros = math.MaxInt64
)

// insert stores the entries whose time is not stored yet. entries must be
// sorted by time without duplicates. It returns how many it stored.
func (tl *timeline) insert(entries []entry) int {
	if len(entries) == 0 {
		return 0
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if n := len(tl.rows); n == 0 || entries[0].micros > tl.rows[n-1].micros {
		// The common case: newer than everything stored.
		for _, e := range entries {
			tl.rows = append(tl.rows, row{e.micros, tl.arena.add(e.data)})
		}
		return len(entries)
	}
	fresh := make([]row, 0, len(entries))
	for _, e := range entries {
		if _, found := tl.search(e.micros); !found {
			fresh = append(fresh, row{e.micros, tl.arena.add(e.data)})
		}
	}
	tl.merge(fresh)
	return len(fresh)
}

// search returns the index of the first row at or after micros and whether
// that row is at micros.
func (tl *timeline) search(micros int64) (int, bool) {
	return slices.BinarySearchFunc(tl.rows, micros, func(r row, m int64) int {
		switch {
		case r.micros < m:
			return -1
		case r.micros > m:
			return 1
		}
		return 0
	})
}

// merge merges sorted rows none of which is stored into tl.rows, in place
// from the back.
func (tl *timeline) merge(fresh []row) {
	i := len(tl.rows) - 1
	tl.rows = slices.Grow(tl.rows, len(fresh))[:len(tl.rows)+len(fresh)]
	for j, k := len(fresh)-1, len(tl.rows)-1; j >= 0; k-- {
		if i >= 0 && tl.rows[i].micros > fresh[j].micros {
			tl.rows[k] = tl.rows[i]
			i--
		} else {
			tl.rows[k] = fresh[j]
			j--
		}
	}
}

// page returns the rows with from ≤ time ≤ to, in the order asked for,
// after skipping offset and keeping at most limit (0: all), and the number
// of rows in the range. The payloads are the arena's own bytes, which are
// never written again, so they can be decoded without the lock.
func (tl *timeline) page(from, to int64, offset, limit int, ascending bool) ([]entry, int) {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	lo, _ := tl.search(from)
	hi := len(tl.rows)
	if to < maxMicros {
		hi, _ = tl.search(to + 1)
	}
	total := max(hi-lo, 0)
	n := max(total-offset, 0)
	if limit > 0 {
		n = min(n, limit)
	}
	out := make([]entry, n)
	for i := range out {
		idx := lo + offset + i
		if !ascending {
			idx = hi - 1 - offset - i
		}
		r := tl.rows[idx]
		out[i] = entry{r.micros, tl.arena.get(r.data)}
	}
	return out, total
}

// count returns the number of rows with from ≤ time ≤ to.
func (tl *timeline) count(from, to int64) int {
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	lo, _ := tl.search(from)
	hi := len(tl.rows)
	if to < maxMicros {
		hi, _ = tl.search(to + 1)
	}
	return max(hi-lo, 0)
}

// arena is append-only byte storage in chunks, so that growing it never
// moves what it holds and a stored payload is never written again.
type arena struct {
	chunks [][]byte
}

// span locates a payload in an arena.
type span struct {
	chunk, off, len uint32
}

// Chunk sizes grow from minChunk to maxChunk so that a short series wastes
// little and a long one is not cut into many small chunks.
const (
	minChunk = 4 << 10
	maxChunk = 64 << 10
)

func (a *arena) add(b []byte) span {
	last := len(a.chunks) - 1
	if last < 0 || cap(a.chunks[last])-len(a.chunks[last]) < len(b) {
		size := minChunk
		if last >= 0 {
			size = min(2*cap(a.chunks[last]), maxChunk)
		}
		a.chunks = append(a.chunks, make([]byte, 0, max(size, len(b))))
		last++
	}
	c := a.chunks[last]
	a.chunks[last] = append(c, b...)
	return span{uint32(last), uint32(len(c)), uint32(len(b))}
}

func (a *arena) get(s span) []byte {
	end := s.off + s.len
	return a.chunks[s.chunk][s.off:end:end]
}
