package app

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/telemetry"
)

// tracingOptions maps telemetry.traces onto the tracer's options.
func tracingOptions(cfg *config.Config, log *zap.Logger) telemetry.Options {
	t := cfg.Telemetry.Traces
	return telemetry.Options{
		Enabled:       t.Enabled,
		Protocol:      t.Protocol,
		Endpoint:      t.Endpoint,
		Headers:       t.Headers,
		SamplingRatio: t.SamplingRatio,
		ServiceName:   t.ServiceName,
		Timeout:       t.Timeout,
		Logger:        log.Named("telemetry"),
	}
}

// FlushTraces exports the spans ended so far (tests read them from their
// collector; the server exports in batches on its own).
func (a *App) FlushTraces(ctx context.Context) error { return a.tracing.ForceFlush(ctx) }

// shutdownTracing exports the spans left and stops the exporter, giving a
// collector that is down a few seconds at most.
func (a *App) shutdownTracing() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.tracing.Shutdown(ctx); err != nil {
		a.log.Warn("exporting the last spans failed", zap.Error(err))
	}
}

// purgeInterval is how often records past telemetry.inspector.retention
// are deleted.
const purgeInterval = time.Hour

// purgeJob deletes turn inspector records older than the retention, once
// at start and then every purgeInterval; the app stops it on Close.
type purgeJob struct {
	stopOnce sync.Once
	done     chan struct{}
	wg       sync.WaitGroup
}

func startPurge(store history.TraceStore, cfg func() *config.Config, log *zap.Logger) *purgeJob {
	j := &purgeJob{done: make(chan struct{})}
	j.wg.Go(func() {
		t := time.NewTicker(purgeInterval)
		defer t.Stop()
		for {
			purgeOnce(store, cfg(), log)
			select {
			case <-j.done:
				return
			case <-t.C:
			}
		}
	})
	return j
}

// purgeOnce deletes the records past the current retention (0 = keep).
func purgeOnce(store history.TraceStore, cfg *config.Config, log *zap.Logger) {
	keep := cfg.Telemetry.Inspector.Retention
	if keep <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := store.PurgeTraces(ctx, time.Now().Add(-keep))
	switch {
	case err != nil:
		log.Warn("deleting old turn inspector records failed", zap.Error(err))
	case n > 0:
		log.Info("deleted turn inspector records past their retention", zap.Int64("count", n),
			zap.Duration("retention", keep))
	}
}

// stop ends the job and waits for it; nil-safe and idempotent.
func (j *purgeJob) stop() {
	if j == nil {
		return
	}
	j.stopOnce.Do(func() { close(j.done) })
	j.wg.Wait()
}
