package app_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/providertest"
	"github.com/chatpipe/chatpipe/internal/stream/redisstore/redistest"
)

// postgresSchema returns a DSN whose connections use a fresh schema,
// dropped at the end of the test; it skips when no PostgreSQL is
// configured and fails when the configured one is unreachable.
func postgresSchema(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("CHATPIPE_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("CHATPIPE_TEST_POSTGRES_DSN not set: PostgreSQL tests skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("PostgreSQL (CHATPIPE_TEST_POSTGRES_DSN) is not reachable: %v", err)
	}
	schema := "replicas_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			_ = conn.Close(ctx)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// clusterConfig is a replica's config: PostgreSQL and Redis shared, the
// fake provider as the model, a short generation lease.
func clusterConfig(t *testing.T, provider *providertest.Server, dsn, redisAddr, prefix string) *config.Config {
	cfg := baseConfig(t, provider)
	cfg.Storage.Driver = "postgres"
	cfg.Postgres.DSN = dsn
	cfg.StreamStore = "redis"
	cfg.Redis.Addr = redisAddr
	cfg.Redis.KeyPrefix = prefix
	cfg.Redis.LeaseTTL = time.Second
	cfg.Knowledge.SampleDocs = false
	return cfg
}

type cluster struct {
	provider *providertest.Server
	a, b     *harness
	dsn      string
	prefix   string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	dsn := postgresSchema(t)
	addr := redistest.Addr(t)
	prefix := redistest.Prefix(t)
	provider := providertest.New(t)
	return &cluster{
		provider: provider,
		a:        startHarness(t, provider, clusterConfig(t, provider, dsn, addr, prefix), ""),
		b:        startHarness(t, provider, clusterConfig(t, provider, dsn, addr, prefix), ""),
		dsn:      dsn, prefix: prefix,
	}
}

// A reconnect may land on any replica: reading alternately from the
// generating replica and the other one, cut after every k events, yields
// exactly the original sequence.
func TestResumeAcrossReplicasHasNoGapOrDuplicate(t *testing.T) {
	for _, k := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			c := newCluster(t)
			script, answer := longAnswer(60)
			c.provider.Enqueue(script)
			session := c.a.createSession()
			s := c.a.ask(session, "q")
			id := s.messageID()
			var got []event
			read := func(s *sse) bool {
				for range k {
					ev, ok := s.next()
					if !ok {
						t.Fatalf("stream ended without stream.finished after %d events", len(got))
					}
					got = append(got, ev)
					if ev.Type == eventbus.TypeStreamFinished {
						return true
					}
				}
				return false
			}
			done := read(s)
			s.close()
			for i := 0; !done; i++ {
				replica := []*harness{c.b, c.a}[i%2]
				r := replica.open("GET", "/api/v1/streams/"+id, "", "Last-Event-ID", got[len(got)-1].ID)
				if r.resp.StatusCode != http.StatusOK {
					t.Fatalf("resume on replica %d: %d", i%2, r.resp.StatusCode)
				}
				done = read(r)
				r.close()
			}
			checkSeqs(t, got, 1)
			if text(got, eventbus.TypeAnswerDelta) != answer {
				t.Fatalf("answer across replicas = %q", text(got, eventbus.TypeAnswerDelta))
			}
			if msg := c.b.message(session, id); msg.Status != "completed" || msg.Content != answer {
				t.Fatalf("saved (read on B) = %+v", msg)
			}
		})
	}
}

// A stop that lands on the other replica aborts the provider call on the
// generating one, and readers on both replicas see the stream end stopped.
func TestStopOnAnotherReplicaAbortsTheGeneration(t *testing.T) {
	c := newCluster(t)
	gate := providertest.NewGate()
	defer gate.Release()
	c.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("one two three four five six", 6), Hold: gate, HoldAfter: 3})
	session := c.a.createSession()
	onA := c.a.ask(session, "q")
	id := onA.messageID()
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	onB := c.b.open("GET", "/api/v1/streams/"+id+"?after=0", "")
	var stop struct{ Status string }
	if code := c.b.call("POST", "/api/v1/streams/"+id+"/stop", "", &stop); code != http.StatusAccepted {
		t.Fatalf("stop on B: %d %+v", code, stop)
	}
	if err := c.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("the provider call on A was not aborted: %v", err)
	}
	for name, s := range map[string]*sse{"A": onA, "B": onB} {
		if fin := finished(t, s.all()); fin.Status != eventbus.StatusStopped {
			t.Fatalf("reader on %s: %+v", name, fin)
		}
	}
	c.a.waitDone(id)
	if msg := c.b.message(session, id); msg.Status != "stopped" {
		t.Fatalf("saved = %+v", msg)
	}
}

// Redis going away mid-stream, for every replica: the generating
// replica's reader keeps receiving, the answer is saved, a resume on the
// other replica asks for a resync instead of a wrong stream, and once
// Redis is back the broken stream still resyncs while new streams work.
func TestRedisGoingAwayMidStream(t *testing.T) {
	dsn := postgresSchema(t)
	addr := redistest.Addr(t)
	prefix := redistest.Prefix(t)
	proxy := redistest.NewProxy(t, addr)
	provider := providertest.New(t)
	a := startHarness(t, provider, clusterConfig(t, provider, dsn, proxy.Addr(), prefix), "")
	b := startHarness(t, provider, clusterConfig(t, provider, dsn, proxy.Addr(), prefix), "")

	gate := providertest.NewGate()
	defer gate.Release()
	const answer = "alpha beta gamma delta epsilon zeta"
	provider.Enqueue(providertest.Script{Chunks: providertest.Answer(answer, 6), Hold: gate, HoldAfter: 2})
	session := a.createSession()
	s := a.ask(session, "q")
	id := s.messageID()
	_ = gate.WaitReached(ctxTimeout(t))
	proxy.Cut()
	gate.Release()
	evs := s.all()
	if fin := finished(t, evs); fin.Status != eventbus.StatusCompleted || text(evs, eventbus.TypeAnswerDelta) != answer {
		t.Fatalf("live reader on A: %v", types(evs))
	}
	a.waitDone(id)
	if msg := b.message(session, id); msg.Status != "completed" || msg.Content != answer {
		t.Fatalf("saved = %+v", msg)
	}
	if evs := b.open("GET", "/api/v1/streams/"+id+"?after=1", "").all(); len(evs) != 1 || evs[0].Type != eventbus.TypeResyncRequired {
		t.Fatalf("resume on B while Redis is away: %v", types(evs))
	}

	proxy.Restore()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := b.open("GET", "/api/v1/streams/"+id+"?after=1", "").all()
		if len(evs) == 1 && evs[0].Type == eventbus.TypeResyncRequired {
			break // the stream's gap is known in Redis too
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Redis returned, resume on B gives %v, want a resync", types(evs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	provider.Enqueue(providertest.Script{Chunks: providertest.Answer("back again", 2)})
	s2 := a.ask(session, "q2")
	s2.all()
	a.waitDone(s2.messageID())
	for {
		full := b.open("GET", "/api/v1/streams/"+s2.messageID(), "").all()
		if len(full) > 0 && full[len(full)-1].Type == eventbus.TypeStreamFinished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Redis returned, B cannot replay a new stream: %v", types(full))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if msg := b.message(session, id); msg.Status != "completed" || msg.Content != answer {
		t.Fatalf("after Redis returned, the saved answer changed: %+v", msg)
	}
}

// killableReplica is a real chatpipe process (replica A) sharing
// PostgreSQL and Redis with the in-process harness b (replica B), so a
// test can SIGKILL the generating replica.
type killableReplica struct {
	cmd  *exec.Cmd
	a    *harness // talks to A
	b    *harness
	base string
}

func startKillableReplica(t *testing.T) (*killableReplica, *providertest.Server) {
	t.Helper()
	dsn := postgresSchema(t)
	addr := redistest.Addr(t)
	prefix := redistest.Prefix(t)
	provider := providertest.New(t)
	b := startHarness(t, provider, clusterConfig(t, provider, dsn, addr, prefix), "")

	bin := chatpipeBinary(t)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	aAddr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir() // no config.yaml: defaults plus the environment
	cmd.Env = append(os.Environ(),
		"CHATPIPE_SERVER_ADDR="+aAddr,
		"CHATPIPE_STORAGE_DRIVER=postgres", "CHATPIPE_POSTGRES_DSN="+dsn,
		"CHATPIPE_STREAM_STORE=redis", "CHATPIPE_REDIS_ADDR="+addr, "CHATPIPE_REDIS_KEY_PREFIX="+prefix,
		"CHATPIPE_REDIS_LEASE_TTL=1s",
		"CHATPIPE_MODELS_DEFAULT_PROVIDER=openai", "CHATPIPE_MODELS_DEFAULT_BASE_URL="+provider.BaseURL(),
		"CHATPIPE_MODELS_DEFAULT_MODEL=fake", "CHATPIPE_MODELS_DEFAULT_RETRIES=0",
		"CHATPIPE_DEFAULT_MODE=chat", "CHATPIPE_KNOWLEDGE_SAMPLE_DOCS=false", "CHATPIPE_LOG_LEVEL=warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	r := &killableReplica{cmd: cmd, a: &harness{t: t, provider: provider, client: b.client}, b: b, base: "http://" + aAddr}
	waitReady(t, b.client, r.base)
	return r, provider
}

// A replica killed with SIGKILL mid-stream: readers on the other replica
// get stream.finished{failed, generator_lost} within the lease bound, and
// the saved message shows the partial answer as failed.
func TestKilledReplicaIsReportedLostWithinTheLease(t *testing.T) {
	r, provider := startKillableReplica(t)
	b := r.b
	gate := providertest.NewGate()
	defer gate.Release()
	provider.Enqueue(providertest.Script{Chunks: providertest.Answer("partial words before the crash and more", 7), Hold: gate, HoldAfter: 3})
	session := b.createSession() // sessions are shared: ask on A in B's session
	s := openURL(t, r.a, r.base, session)
	id := s.resp.Header.Get("X-Message-Id")
	s.until(isType(eventbus.TypeAnswerDelta))
	_ = gate.WaitReached(ctxTimeout(t))
	onB := b.open("GET", "/api/v1/streams/"+id+"?after=0", "")
	onB.until(isType(eventbus.TypeAnswerDelta))

	killed := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rest := onB.all()
	fin := finished(t, rest)
	if fin.Status != eventbus.StatusFailed || fin.Reason != "generator_lost" {
		t.Fatalf("reader on B: %+v", fin)
	}
	if took := time.Since(killed); took > 4*time.Second {
		t.Errorf("generator_lost after %v; the lease is 1s", took)
	}
	if got := types(rest); !strings.Contains(strings.Join(got, " "), "answer.end error stream.finished") {
		t.Errorf("the lost stream's ending is not balanced: %v", got)
	}
	msg := b.message(session, id)
	if msg.Status != "failed" || !strings.HasPrefix("partial words before the crash and more", msg.Content) || msg.Content == "" {
		t.Fatalf("saved = %+v", msg)
	}
}

// A replica killed mid-thinking: the stream the other replica ends reads
// like a local ending — </think> and thinking.end, then the error, then
// stream.finished — and the saved thinking is clean text.
func TestReplicaKilledMidThinkingEndsBalanced(t *testing.T) {
	r, provider := startKillableReplica(t)
	b := r.b
	gate := providertest.NewGate()
	defer gate.Release()
	provider.Enqueue(providertest.Script{Chunks: providertest.ReasoningContent("weighing the options one by one", 6),
		Hold: gate, HoldAfter: 3})
	session := b.createSession()
	s := openURL(t, r.a, r.base, session)
	id := s.resp.Header.Get("X-Message-Id")
	s.until(isType(eventbus.TypeThinkingDelta))
	_ = gate.WaitReached(ctxTimeout(t))
	onB := b.open("GET", "/api/v1/streams/"+id+"?after=0", "")
	before := onB.until(isType(eventbus.TypeThinkingDelta))

	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rest := onB.all()
	all := append(before, rest...)
	got := strings.Join(types(rest), " ")
	if !strings.HasSuffix(got, "thinking.delta thinking.end error stream.finished") {
		t.Fatalf("ending = %v, want … thinking.delta(</think>) thinking.end error stream.finished", got)
	}
	if thought := text(all, eventbus.TypeThinkingDelta); !strings.HasPrefix(thought, "<think>") || !strings.HasSuffix(thought, "</think>") {
		t.Errorf("thinking on the wire = %q, want it wrapped in <think>…</think>", thought)
	}
	if fin := finished(t, rest); fin.Reason != "generator_lost" {
		t.Errorf("finished = %+v", fin)
	}
	msg := b.message(session, id)
	if msg.Status != "failed" || msg.Thinking == "" || strings.Contains(msg.Thinking, "think>") {
		t.Errorf("saved = %+v, want failed with clean thinking", msg)
	}
}

// A research answer whose replica is killed while its three
// sub-researchers are thinking: the other replica closes each
// sub-researcher's thinking (</think>, thinking.end, with its origin)
// before the error and stream.finished, as the sub-researchers' runner
// would have done.
func TestReplicaKilledMidResearchClosesTheSubResearchersBlocks(t *testing.T) {
	r, provider := startKillableReplica(t)
	b := r.b
	gate := providertest.NewGate()
	defer gate.Release()
	provider.SetResponder(func(req providertest.Request) providertest.Script {
		if user, _ := lastUser(req); strings.Contains(user, "Plan the research") {
			return providertest.Script{Chunks: providertest.Answer("1. Where?\n2. When?\n3. Why?", 3)}
		}
		return providertest.Script{Chunks: providertest.ReasoningContent("weighing the sources one by one", 4), Hold: gate, HoldAfter: 2}
	})
	session := b.createResearchSession()
	s := openURL(t, r.a, r.base, session)
	id := s.resp.Header.Get("X-Message-Id")
	onB := b.open("GET", "/api/v1/streams/"+id+"?after=0", "")
	thinking := map[string]bool{}
	before := onB.until(func(e event) bool {
		if e.Type == eventbus.TypeThinkingDelta && strings.HasPrefix(origin(e), "sub:") {
			thinking[origin(e)] = true
		}
		return len(thinking) == 3
	})

	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rest := onB.all()
	if fin := finished(t, rest); fin.Reason != "generator_lost" {
		t.Fatalf("finished = %+v", fin)
	}
	const ending = "thinking.delta thinking.end thinking.delta thinking.end thinking.delta thinking.end error stream.finished"
	if got := strings.Join(types(rest), " "); !strings.HasSuffix(got, ending) {
		t.Fatalf("ending = %v, want each sub-researcher's </think> and thinking.end, then error, stream.finished", got)
	}
	for o, evs := range byOrigin(append(before, rest...)) {
		if !strings.HasPrefix(o, "sub:") {
			continue
		}
		if thought := text(evs, eventbus.TypeThinkingDelta); !strings.HasPrefix(thought, "<think>") || !strings.HasSuffix(thought, "</think>") {
			t.Errorf("%s thinking on the wire = %q, want it wrapped in <think>…</think>", o, thought)
		}
		if last := evs[len(evs)-1]; last.Type != eventbus.TypeThinkingEnd {
			t.Errorf("%s ends with %s, want thinking.end", o, last.Type)
		}
	}
	if msg := b.message(session, id); msg.Status != "failed" {
		t.Errorf("saved = %+v, want failed", msg)
	}
}

func waitReady(t *testing.T, client *http.Client, base string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("replica A never became ready")
}

// Deleting a session on the replica that does not generate its running
// answer stops that answer on the generating one: the provider call is
// aborted and the stream ends stopped, as it does on the same replica.
func TestDeletingASessionOnAnotherReplicaStopsItsRunningAnswer(t *testing.T) {
	c := newCluster(t)
	gate := providertest.NewGate()
	defer gate.Release()
	c.provider.Enqueue(providertest.Script{Chunks: providertest.Answer("one two three four five six", 6), Hold: gate, HoldAfter: 3})
	session := c.a.createSession()
	onA := c.a.ask(session, "q")
	id := onA.messageID()
	if err := gate.WaitReached(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	if code := c.b.call("DELETE", "/api/v1/sessions/"+session, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete on B: %d", code)
	}
	if err := c.provider.WaitAbort(ctxTimeout(t)); err != nil {
		t.Fatalf("the provider call on A was not aborted: %v", err)
	}
	if fin := finished(t, onA.all()); fin.Status != eventbus.StatusStopped || fin.Reason != "user" {
		t.Fatalf("reader on A: %+v", fin)
	}
	c.a.waitDone(id)
	if code := c.a.call("GET", "/api/v1/sessions/"+session+"/messages", "", nil); code != http.StatusNotFound {
		t.Fatalf("the deleted session's messages on A: %d", code)
	}
}
