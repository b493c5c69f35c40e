package metrics

import "github.com/prometheus/client_golang/prometheus"

// metaMetrics count what users say of answers (feedback) and the model
// jobs run after a turn (titles, history compaction).
type metaMetrics struct {
	feedback        *prometheus.CounterVec
	feedbackRemoved *prometheus.CounterVec
	jobs            *prometheus.CounterVec
}

func (m *Metrics) registerMeta() {
	m.meta.feedback = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatpipe_feedback_total",
		Help: "Ratings given to answers (up, down), by mode and the model that wrote the answer; a changed rating counts " +
			"the new one here and the old one in chatpipe_feedback_removed_total."},
		[]string{"mode", "model", "rating"})
	m.meta.feedbackRemoved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatpipe_feedback_removed_total",
		Help: "Ratings withdrawn (deleted or replaced by the other one); given minus removed is what stands."},
		[]string{"mode", "model", "rating"})
	m.meta.jobs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatpipe_background_jobs_total",
		Help: "Model jobs run after a turn, by kind (title, compaction) and outcome (done, failed, refused, canceled)."},
		[]string{"kind", "outcome"})
	m.reg.MustRegister(m.meta.feedback, m.meta.feedbackRemoved, m.meta.jobs)
}

// Feedback records a rating change: given is the new rating ("" when it
// was deleted), removed the one it replaced ("" when there was none). The
// same rating given again changes nothing.
func (m *Metrics) Feedback(mode, model, given, removed string) {
	if given == removed {
		return
	}
	if given != "" {
		m.meta.feedback.WithLabelValues(mode, model, given).Inc()
	}
	if removed != "" {
		m.meta.feedbackRemoved.WithLabelValues(mode, model, removed).Inc()
	}
}

// Job records how a background model job ended.
func (m *Metrics) Job(kind, outcome string) { m.meta.jobs.WithLabelValues(kind, outcome).Inc() }
