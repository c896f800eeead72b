// Package jobs is the work itself, free of transport: task names and
// payloads, the replay engine, backtest fan-out, strategy generation,
// synthetic data and collectors. It never imports asynq or huma.
package jobs

import "encoding/json"

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
// and announce it on Redis; the api decodes it.
type Outcome struct {
	Result  json.RawMessage `json:"result,omitempty"`
	Failure *Failure        `json:"failure,omitempty"`
}
