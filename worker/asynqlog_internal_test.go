package worker

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/throttle"
)

// TestSlogAdapterCountsWhatItHeldBack: a repeat of Asynq's within the
// period is held back and counted on the next one let through; a message
// gone quiet is logged with its count, at its own level, once another
// message comes after the period; Fatal is never held back.
func TestSlogAdapterCountsWhatItHeldBack(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	a := slogAdapter{l: slog.New(slog.NewJSONHandler(&buf, nil)), throttle: throttle.New(time.Minute, func() time.Time { return clock })}
	a.Error("Dequeue error: ", "refused")
	a.Warn("forward: refused")
	for range 3 {
		clock = clock.Add(time.Second)
		a.Error("Dequeue error: ", "refused")
		a.Warn("forward: refused")
	}
	clock = clock.Add(time.Minute)
	a.Error("Dequeue error: refused") // the warning is gone: logged with its count
	a.Fatal("stopped")
	a.Fatal("stopped")

	type rec struct {
		Level      string `json:"level"`
		Msg        string `json:"msg"`
		Suppressed int    `json:"suppressed"`
	}
	var got []rec
	for line := range strings.Lines(buf.String()) {
		var r rec
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []rec{
		{"ERROR", "Dequeue error: refused", 0},
		{"WARN", "forward: refused", 0},
		{"WARN", "forward: refused", 3},
		{"ERROR", "Dequeue error: refused", 3},
		{"ERROR", "asynq fatal: stopped", 0},
		{"ERROR", "asynq fatal: stopped", 0},
	}
	if len(got) != len(want) {
		t.Fatalf("logged %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
