package worker

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/jobs"
)

// queueCollector exports the state of updown's Asynq queues, read from
// Redis at scrape time, so any process (api or worker) can serve it.
type queueCollector struct {
	insp  *asynq.Inspector
	log   *slog.Logger
	tasks *prometheus.Desc
	lat   *prometheus.Desc
	up    *prometheus.Desc
}

// NewQueueCollector returns a Prometheus collector of queue sizes by state
// and queue latency (age of the oldest pending task).
func NewQueueCollector(rdb redis.UniversalClient, log *slog.Logger) prometheus.Collector {
	return &queueCollector{
		insp: asynq.NewInspectorFromRedisClient(rdb),
		log:  log,
		tasks: prometheus.NewDesc("updown_queue_tasks", "Tasks in a queue by state.",
			[]string{"queue", "state"}, nil),
		lat: prometheus.NewDesc("updown_queue_latency_seconds", "Age of the oldest pending task of a queue.",
			[]string{"queue"}, nil),
		up: prometheus.NewDesc("updown_queue_scrape_ok", "1 when the queue state could be read from Redis.", nil, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.tasks
	ch <- c.lat
	ch <- c.up
}

// queueScrapeWait bounds how long a scrape waits for the queue state:
// with Redis hung, reading it took 5 to 10 s (a worker's /metrics took
// 10 s, Prometheus's default scrape timeout), so the whole scrape failed,
// the runtime metrics with it, and updown_queue_scrape_ok 0 never reached
// Prometheus, just when it mattered.
const queueScrapeWait = 2 * time.Second

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	read := make(chan []prometheus.Metric, 1) // buffered: a late read does not block
	go func() { read <- c.read() }()
	select {
	case ms := <-read:
		for _, m := range ms {
			ch <- m
		}
	case <-time.After(queueScrapeWait):
		c.log.Warn("read queue metrics", "err", fmt.Sprintf("Redis did not answer within %v", queueScrapeWait))
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
	}
}

// read reads the queue state from Redis, updown_queue_scrape_ok last.
func (c *queueCollector) read() (ms []prometheus.Metric) {
	ok := 1.0
	defer func() { ms = append(ms, prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, ok)) }()
	// Asynq creates a queue with its first task: list what exists.
	existing, err := c.insp.Queues()
	if err != nil {
		ok = 0
		c.log.Warn("read queue metrics", "err", err)
		return ms
	}
	for _, q := range existing {
		if _, ours := jobs.QueuePriorities()[q]; !ours {
			continue
		}
		info, err := c.insp.GetQueueInfo(q)
		if err != nil {
			ok = 0
			c.log.Warn("read queue metrics", "queue", q, "err", err)
			continue
		}
		for state, n := range map[string]int{
			"pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled,
			"retry": info.Retry, "archived": info.Archived, "completed": info.Completed,
		} {
			ms = append(ms, prometheus.MustNewConstMetric(c.tasks, prometheus.GaugeValue, float64(n), q, state))
		}
		ms = append(ms, prometheus.MustNewConstMetric(c.lat, prometheus.GaugeValue, info.Latency.Seconds(), q))
	}
	return ms
}

// taskMetrics time the work of each task type.
type taskMetrics struct {
	duration *prometheus.HistogramVec
}

func newTaskMetrics(reg prometheus.Registerer) (*taskMetrics, error) {
	m := &taskMetrics{duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "updown",
		Name:      "task_duration_seconds",
		Help:      "Time spent running tasks (replays, backtest shards, generations) by type and outcome.",
		Buckets:   []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"type", "outcome"})}
	if reg == nil {
		return m, nil
	}
	if err := reg.Register(m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *taskMetrics) observe(taskType, outcome string, d time.Duration) {
	m.duration.WithLabelValues(taskType, outcome).Observe(d.Seconds())
}
