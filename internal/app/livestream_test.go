package app_test

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chatpipe/chatpipe/config"
)

// TestALiveStreamHoldsFewGoroutinesOnSmallRestingStacks holds answers of
// the demo model between two chunks and counts what each costs the
// server: a session's SSE stream one goroutine (the generation; the hub
// writes its reader), an OpenAI-compatible completion three (the
// connection's, net/http's background read, the generation), and, once
// the GC has shrunk resting stacks, at most maxStackPerLiveStream (three
// goroutines) or maxStackPerHubStream (one) of stack. Memory per live stream is mostly these
// (issue 15): a handler or chain frame that grows pushes a resting stack
// past a quarter of its size, and the GC then keeps it at twice the size.
// Both ways of streaming an answer are held: a session's SSE stream and an
// OpenAI-compatible completion. The clients are raw connections, so
// nothing of theirs is counted.
func TestALiveStreamHoldsFewGoroutinesOnSmallRestingStacks(t *testing.T) {
	const streams = 16
	h := newHarness(t, func(c *config.Config) {
		// Every answer waits for its first chunk; a completion's first bytes
		// are a heartbeat (the shortest allowed).
		c.Models["default"] = config.Model{Provider: "demo", ChunkDelay: time.Hour}
		c.Stream.Heartbeat = time.Second
	})
	sessions := make([]string, streams)
	for i := range sessions {
		sessions[i] = h.createSession()
	}
	h.client.CloseIdleConnections()
	addr := h.srv.Listener.Addr().String()
	var held []net.Conn // closed at the end, so that nothing ends while the next subtest counts
	t.Cleanup(func() {
		for _, c := range held {
			c.Close() // the answers go on; app.Close ends them
		}
	})

	t.Run("session", func(t *testing.T) {
		conns := holdStreams(t, streams, "event: model_call.started", 1, maxStackPerHubStream, func(i int) net.Conn {
			return postRaw(t, addr, "/api/v1/sessions/"+sessions[i]+"/messages", `{"content":"What does chatpipe stream?"}`)
		})
		held = conns
	})
	t.Run("openai", func(t *testing.T) {
		// A completion sends nothing before its first token or a
		// heartbeat, which comes well after its model call started.
		conns := holdStreams(t, streams, ": ping", 3, maxStackPerLiveStream, func(int) net.Conn {
			return postRaw(t, addr, "/v1/chat/completions",
				`{"stream":true,"messages":[{"role":"user","content":"What does chatpipe stream?"}]}`)
		})
		for _, c := range conns {
			c.Close() // the client leaving stops a completion
		}
	})
}

// holdStreams opens streams live answers with open, reads each until a
// line starting with until, and checks what they cost the server at rest:
// each goroutines and at most maxStack bytes of stack (0 = not bounded).
func holdStreams(t *testing.T, streams int, until string, each, maxStack int, open func(i int) net.Conn) []net.Conn {
	t.Helper()
	goroutines0, stack0, heap0 := restingGoroutinesAndStack()
	conns := make([]net.Conn, streams)
	for i := range conns {
		conns[i] = open(i)
	}
	for _, c := range conns {
		readUntil(t, c, until)
	}
	goroutines, stack, heap := restingGoroutinesAndStack()
	perStream := float64(goroutines-goroutines0) / float64(streams)
	stackPerStream := float64(stack-stack0) / float64(streams)
	t.Logf("per live stream: %.2f goroutines, %.1f KiB of stack, %.1f KiB of live heap (net/http's included; not bounded here)",
		perStream, stackPerStream/1024, float64(heap-heap0)/float64(streams)/1024)
	// Beyond three a stream, only what the first answer starts for all
	// (the shared partial saver).
	if extra := goroutines - goroutines0 - each*streams; extra > 2 {
		t.Errorf("%d live streams hold %d goroutines, want at most %d each and 2 shared",
			streams, goroutines-goroutines0, each)
	}
	if maxStack > 0 && stackPerStream > float64(maxStack) {
		t.Errorf("a live stream holds %.1f KiB of stack at rest, want at most %d KiB", stackPerStream/1024, maxStack>>10)
	}
	return conns
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

// postRaw posts body to path over a connection of its own.
func postRaw(t *testing.T, addr, path, body string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: chatpipe\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n%s", path, len(body), body)
	return conn
}

// readUntil reads the response on conn up to a line starting with prefix.
func readUntil(t *testing.T, conn net.Conn, prefix string) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading until %q: %v", prefix, err)
		}
		if strings.HasPrefix(line, prefix) {
			return
		}
	}
}
