// Package jobs is the work itself, free of transport: task names and
// payloads, the replay engine, backtest fan-out, strategy generation,
// synthetic data and collectors. It never imports asynq or huma.
package jobs

import (
	"bytes"
	"encoding/json"
)

// Task types, one per kind of work the workers do.
const (
	// TypePing is a no-op task: it measures queue overhead and proves a
	// worker is consuming.
	TypePing = "updown:ping"
)

// Queues and their priorities (DESIGN 7): user-facing work first, so that
// ingestion never starves a waiting request.
const (
	QueueReplay   = "replay"
	QueueBacktest = "backtest"
	QueueAI       = "ai"
	QueueCollect  = "collect"
)

// QueuePriorities is the weight of each queue for the worker's scheduler.
func QueuePriorities() map[string]int {
	return map[string]int{QueueReplay: 6, QueueBacktest: 6, QueueAI: 3, QueueCollect: 1}
}

// TypeReplay replays one strategy against one resolved market. Its payload
// is a replay.Request (JSON); its result a replay.Result.
const TypeReplay = "updown:replay"

// TypeResolve settles one ended market (queue collect); payload collect.ResolveRequest.
const TypeResolve = "updown:resolve"

// Failure is a task outcome a user should see: the request was fine when it
// was checked but the work cannot be done (the market vanished, has no
// data). Code is a SPEC 7 error code; the api maps it to a status.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (f *Failure) Error() string { return f.Code + ": " + f.Message }

// Outcome is what a finished task leaves for whoever waits on it: its
// result, or the failure to answer. Workers write it as the task result
// and announce it on Redis (Encode); the api decodes it (DecodeOutcome).
// The failure comes first on the wire, so that an encoded outcome that
// starts with the result holds nothing else.
type Outcome struct {
	Failure *Failure        `json:"failure,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// resultPrefix starts an encoded outcome that holds a result alone.
const resultPrefix = `{"result":`

// Encode writes o as JSON. An outcome with a result alone, which a worker
// encoded with encoding/json (compact, valid), is framed as it is rather
// than scanned again: a 24hr replay's result runs to megabytes, and
// encoding/json would check and copy every byte of it.
func (o Outcome) Encode() ([]byte, error) {
	if o.Failure != nil || len(o.Result) == 0 {
		return json.Marshal(o)
	}
	b := make([]byte, 0, len(resultPrefix)+len(o.Result)+1)
	b = append(b, resultPrefix...)
	b = append(b, o.Result...)
	return append(b, '}'), nil
}

// DecodeOutcome reads an outcome Encode wrote. A result alone is taken as
// it is, without a scan of its bytes (see Encode); anything else is
// decoded by encoding/json. The Result shares b's memory.
func DecodeOutcome(b []byte) (Outcome, error) {
	if bytes.HasPrefix(b, []byte(resultPrefix)) && len(b) > len(resultPrefix)+1 && b[len(b)-1] == '}' {
		return Outcome{Result: b[len(resultPrefix) : len(b)-1]}, nil
	}
	var o Outcome
	err := json.Unmarshal(b, &o)
	return o, err
}
