package app_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
)

// TestALiveStreamHoldsThreeGoroutinesOnSmallRestingStacks holds answers of
// the demo model between two chunks and counts what each costs the
// server: three goroutines (the connection's, net/http's background read,
// the generation) and, once the GC has shrunk resting stacks, at most
// maxStackPerLiveStream of stack. Memory per live stream is mostly these
// (issue 15): a handler or chain frame that grows pushes a resting stack
// past a quarter of its size, and the GC then keeps it at twice the size.
// The clients are raw connections, so nothing of theirs is counted.
func TestALiveStreamHoldsThreeGoroutinesOnSmallRestingStacks(t *testing.T) {
	const streams = 16
	h := newHarness(t, func(c *config.Config) {
		c.Models["default"] = config.Model{Provider: "demo", ChunkDelay: time.Hour} // every answer waits for its first chunk
	})
	sessions := make([]string, streams)
	for i := range sessions {
		sessions[i] = h.createSession()
	}
	h.client.CloseIdleConnections()
	goroutines0, stack0, heap0 := restingGoroutinesAndStack()

	ids := make([]string, streams)
	for i, s := range sessions {
		conn, id := postRaw(t, h.srv.Listener.Addr().String(), s)
		defer conn.Close()
		ids[i] = id
	}
	goroutines, stack, heap := restingGoroutinesAndStack()
	perStream := float64(goroutines-goroutines0) / streams
	stackPerStream := float64(stack-stack0) / streams
	t.Logf("per live stream: %.2f goroutines, %.1f KiB of stack, %.1f KiB of live heap (net/http's included; not bounded here)",
		perStream, stackPerStream/1024, float64(heap-heap0)/streams/1024)
	// Beyond three a stream, only what the first answer starts for all
	// (the shared partial saver).
	if extra := goroutines - goroutines0 - 3*streams; extra > 2 {
		t.Errorf("%d live streams hold %d goroutines, want at most 3 each (connection, background read, generation) and 2 shared",
			streams, goroutines-goroutines0)
	}
	if stackPerStream > maxStackPerLiveStream {
		t.Errorf("a live stream holds %.1f KiB of stack at rest, want at most %d KiB", stackPerStream/1024, maxStackPerLiveStream>>10)
	}
	for _, id := range ids {
		if code := h.call("POST", "/api/v1/streams/"+id+"/stop", "", nil); code != http.StatusAccepted {
			t.Fatalf("stop %s: %d", id, code)
		}
	}
}

// restingGoroutinesAndStack counts the goroutines, the stack memory in use
// once repeated GCs have shrunk every resting stack as far as it goes (one
// halving per GC), and the live heap.
func restingGoroutinesAndStack() (goroutines int, stack, heap uint64) {
	for range 4 {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.StackInuse, ms.HeapAlloc
}

// postRaw asks a question in session over a connection of its own and
// reads until the answer's model call has started (the generation then
// waits for the demo's first chunk); it returns the connection and the
// answer's stream id.
func postRaw(t *testing.T, addr, session string) (net.Conn, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"content":"What does chatpipe stream?"}`
	fmt.Fprintf(conn, "POST /api/v1/sessions/%s/messages HTTP/1.1\r\nHost: chatpipe\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n%s", session, len(body), body)
	if err := conn.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	id := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the answer of session %s: %v", session, err)
		}
		if v, ok := strings.CutPrefix(line, "X-Message-Id: "); ok {
			id = strings.TrimSpace(v)
		}
		if strings.HasPrefix(line, "event: model_call.started") {
			if id == "" {
				t.Fatalf("the answer of session %s has no X-Message-Id", session)
			}
			return conn, id
		}
	}
}
