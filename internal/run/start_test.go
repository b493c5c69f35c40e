package run

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/internal/history"
	"github.com/chatpipe/chatpipe/internal/history/sqlitestore"
	"github.com/chatpipe/chatpipe/internal/stream"
	"github.com/chatpipe/chatpipe/pipeline"
)

// heldTurns is a history store whose StartTurn waits for release, then
// saves the turn, or fails with fail.
type heldTurns struct {
	history.Store
	release chan struct{}
	fail    error
}

func (h *heldTurns) StartTurn(ctx context.Context, sessionID string, user history.Message, assistantID string) (history.Message, history.Message, error) {
	<-h.release
	if h.fail != nil {
		return history.Message{}, history.Message{}, h.fail
	}
	return h.Store.StartTurn(ctx, sessionID, user, assistantID)
}

// answerPlugin tells reached when the answer starts, then answers.
type answerPlugin struct{ reached chan struct{} }

func (answerPlugin) Name() string { return "answer" }
func (answerPlugin) Events() []pipeline.EventType {
	return []pipeline.EventType{pipeline.StageGenerate}
}
func (p answerPlugin) OnEvent(ctx context.Context, _ pipeline.EventType, cm *pipeline.ChatManage, next func() *pipeline.PluginError) *pipeline.PluginError {
	close(p.reached)
	cm.Emit(eventbus.Event{Type: eventbus.TypeAnswerStart})
	cm.Emit(eventbus.Delta(eventbus.TypeAnswerDelta, "hello"))
	cm.Emit(eventbus.Event{Type: eventbus.TypeAnswerEnd})
	return next()
}

func newStartManager(t *testing.T, fail error) (*Manager, *heldTurns, chan struct{}, history.Session) {
	t.Helper()
	store, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	held := &heldTurns{Store: store, release: make(chan struct{}), fail: fail}
	reached := make(chan struct{})
	chain, err := pipeline.NewEventManager("chat", []pipeline.Plugin{answerPlugin{reached: reached}})
	if err != nil {
		t.Fatal(err)
	}
	setup := &Setup{Chains: map[string]*pipeline.EventManager{"chat": chain}, DefaultMode: "chat"}
	streams := stream.NewMemory(stream.MemoryOptions{})
	t.Cleanup(func() { streams.Close() })
	m := NewManager(Options{Setup: func() *Setup { return setup }, History: held, Streams: streams})
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	sess, err := store.CreateSession(t.Context(), history.Session{ID: "s1", Title: "New chat"})
	if err != nil {
		t.Fatal(err)
	}
	return m, held, reached, sess
}

// A session's first question is answered while its turn is being saved:
// the answer starts before the save returns, Start returns once it has,
// and the answer is saved into the reserved message, once.
func TestAFirstQuestionIsAnsweredWhileItsTurnIsSaved(t *testing.T) {
	m, held, reached, sess := newStartManager(t, nil)
	type started struct {
		r   *Run
		err error
	}
	out := make(chan started, 1)
	go func() {
		r, err := m.Start(context.Background(), StartRequest{SessionID: sess.ID, Question: "hi"})
		out <- started{r, err}
	}()
	select {
	case <-reached: // the answer started while StartTurn is held
	case s := <-out:
		t.Fatalf("Start returned (%v) before the answer started: the save was waited for", s.err)
	case <-time.After(10 * time.Second): // a deadlock, not a speed: the answer waits for the held save
		t.Fatal("the answer did not start while its turn was being saved")
	}
	select {
	case s := <-out:
		t.Fatalf("Start returned (%v) before its turn was saved", s.err)
	default:
	}
	close(held.release)
	s := <-out
	if s.err != nil {
		t.Fatal(s.err)
	}
	<-s.r.Done()
	msg, err := held.GetMessage(t.Context(), s.r.StreamID)
	if err != nil || msg.Status != history.StatusCompleted || msg.Content != "hello" {
		t.Fatalf("saved answer = %+v, %v; want completed %q", msg, err, "hello")
	}
	q, err := held.GetMessage(t.Context(), msg.ParentID)
	if err != nil || q.Content != "hi" || q.ParentID != "" {
		t.Fatalf("saved question = %+v, %v; want the root question %q", q, err, "hi")
	}
}

// When the turn cannot be saved, Start fails with the store's error as
// before, the answer that had started is stopped and nothing is saved.
func TestAFirstQuestionWhoseTurnIsNotSavedFailsAndSavesNothing(t *testing.T) {
	m, held, reached, sess := newStartManager(t, history.ErrNotFound)
	out := make(chan error, 1)
	go func() {
		_, err := m.Start(context.Background(), StartRequest{SessionID: sess.ID, Question: "hi"})
		out <- err
	}()
	select {
	case <-reached:
	case <-time.After(10 * time.Second): // a deadlock, not a speed
		close(held.release)
		t.Fatal("the answer did not start while its turn was being saved")
	}
	close(held.release)
	if err := <-out; !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Start = %v, want the store's ErrNotFound", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.Shutdown(ctx) // the cancelled run gave its slot back
	if ctx.Err() != nil {
		t.Fatal("Shutdown waited for a run that never ended")
	}
	if msgs, err := held.Branch(t.Context(), sess.ID, "", 0); err != nil || len(msgs) != 0 {
		t.Fatalf("session holds %+v, %v; want nothing", msgs, err)
	}
	m.mu.Lock()
	left := len(m.turns)
	m.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d turn saves still tracked", left)
	}
}
