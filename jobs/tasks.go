// Package jobs is the work itself, free of transport: task names and
// payloads, the replay engine, backtest fan-out, strategy generation,
// synthetic data and collectors. It never imports asynq or huma.
package jobs

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
