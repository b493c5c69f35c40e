package llm

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/eino/schema"
	"go.uber.org/goleak"

	"github.com/chatpipe/chatpipe/config"
	"github.com/chatpipe/chatpipe/internal/citation"
)

// ragPrompt renders the default rag_prompt as chat_completion_stream does.
func ragPrompt(question string, passages []citation.Passage) string {
	return strings.NewReplacer("{context}", citation.FormatContext(passages), "{question}", question).
		Replace(config.DefaultRAGPrompt)
}

// streamed reads the demo's stream to the end and returns its thinking and answer.
func streamed(t *testing.T, prompt string) (thinking, answer string) {
	t.Helper()
	sr, err := NewDemo(0).Stream(context.Background(), []*schema.Message{schema.UserMessage(prompt)})
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	var th, ans strings.Builder
	for {
		m, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		th.WriteString(m.ReasoningContent)
		ans.WriteString(m.Content)
	}
	return th.String(), ans.String()
}

var citationMarker = regexp.MustCompile(`\[(\d+)\]`)

// citedNumbers returns the [n] numbers in s.
func citedNumbers(t *testing.T, s string) []int {
	t.Helper()
	var out []int
	for _, m := range citationMarker.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

func TestDemoAnswersExtractivelyWithCitationsOfExistingPassages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, question string
		passages       []citation.Passage
		label, quote   string
		cite           int
	}{
		{
			name:     "english",
			question: "How do I resume a stream after the connection drops?",
			passages: []citation.Passage{
				{Index: 1, Title: "Running chatpipe", Heading: "Quick start", Content: "# Quick start\n" +
					"Run chatpipe with go run . in the repository root. It listens on 127.0.0.1:8080 by default."},
				{Index: 2, Title: "Resuming a stream", Content: "Every event carries a sequence number. " +
					"To resume a stream after a dropped connection, reconnect with the Last-Event-ID header. " +
					"The server replays the missed events and then continues live."},
				{Index: 3, Title: "Writing a plugin", Content: "A plugin implements Name, Events and OnEvent."},
			},
			label: "[demo model]",
			quote: "To resume a stream after a dropped connection, reconnect with the Last-Event-ID header.",
			cite:  2,
		},
		{
			name:     "chinese",
			question: "网络断开后如何恢复流？",
			passages: []citation.Passage{
				{Index: 1, Title: "插件", Content: "插件实现 Name、Events 和 OnEvent 三个方法。插件在 init 中注册。"},
				{Index: 2, Title: "流的恢复", Content: "每个事件都带有序号。网络断开后，客户端使用 Last-Event-ID 请求头重新连接，即可恢复流。" +
					"服务器会先重放错过的事件，然后继续实时推送。"},
			},
			label: "[演示模型]",
			quote: "网络断开后，客户端使用 Last-Event-ID 请求头重新连接，即可恢复流。",
			cite:  2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prompt := ragPrompt(tc.question, tc.passages)
			th, ans := streamed(t, prompt)
			if !strings.HasPrefix(ans, tc.label) {
				t.Errorf("answer is not labelled as the demo:\n%s", ans)
			}
			if !strings.Contains(ans, tc.quote) {
				t.Errorf("answer does not quote the best sentence %q:\n%s", tc.quote, ans)
			}
			nums := citedNumbers(t, ans)
			if len(nums) < 2 || len(nums) > 3 {
				t.Errorf("answer quotes %d sentences, want 2 or 3:\n%s", len(nums), ans)
			}
			if len(nums) == 0 || nums[0] != tc.cite {
				t.Errorf("the best quote cites %v, want [%d] first:\n%s", nums, tc.cite, ans)
			}
			for _, n := range nums {
				if n < 1 || n > len(tc.passages) {
					t.Errorf("answer cites [%d], which does not exist:\n%s", n, ans)
				}
			}
			if th == "" || strings.Contains(th, "\n") {
				t.Errorf("thinking = %q, want one short line", th)
			}
			// Deterministic, and Generate says the same as Stream.
			msg, err := NewDemo(0).Generate(context.Background(), []*schema.Message{schema.UserMessage(prompt)})
			if err != nil || msg.Content != ans || msg.ReasoningContent != th {
				t.Errorf("Generate differs from Stream: %v\n%q\n%q", err, msg.Content, ans)
			}
		})
	}
}

func TestDemoSaysNothingWasFoundForAnEmptyContext(t *testing.T) {
	t.Parallel()
	_, ans := streamed(t, ragPrompt("What is the capital of Mars?", nil))
	if !strings.HasPrefix(ans, "[demo model] I found nothing about this in the knowledge base") {
		t.Fatalf("answer = %q", ans)
	}
	_, ans = streamed(t, ragPrompt("火星的首都是哪里？", nil))
	if !strings.Contains(ans, "知识库中没有找到") {
		t.Fatalf("answer = %q", ans)
	}
}

func TestDemoKeepsItsCannedAnswerWithoutContext(t *testing.T) {
	t.Parallel()
	th, ans := streamed(t, "hello")
	wantTh, wantAns := DemoReply("hello")
	if th != wantTh || ans != wantAns {
		t.Fatalf("plain chat changed:\n%q\n%q", th, ans)
	}
}

func TestSplitForStreamConcatenatesBack(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a b c", "网络断开后，客户端重新连接。", "mixed 中文 text\nnext"} {
		pieces := splitForStream(s)
		if strings.Join(pieces, "") != s {
			t.Errorf("splitForStream(%q) = %q", s, pieces)
		}
		for _, p := range pieces {
			if len([]rune(p)) > 12 && !strings.Contains(p, " ") {
				t.Errorf("piece %q is too long to look streamed", p)
			}
		}
	}
}

func TestDemoNeverQuotesCodeAsASentence(t *testing.T) {
	got := splitSentences("Resume with the header.\n\n```sh\ncurl -N localhost:8080/api/v1/streams/x -H 'Last-Event-ID: 3'\n```\n\n    indented code line here\n\nThe stream replays what you missed.")
	for _, s := range got {
		if strings.Contains(s, "curl") || strings.Contains(s, "indented") {
			t.Fatalf("code quoted as a sentence: %q", got)
		}
	}
	if len(got) != 2 {
		t.Fatalf("sentences = %q", got)
	}
}

// The demo's stream is driven by its reader: an open stream mid-answer
// holds no goroutine (one per live answer would cost a stack each), and a
// cancelled context ends it with the context's error, then io.EOF. Not
// parallel: it counts goroutines.
func TestDemoStreamRunsInItsReaderAndEndsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, before)
	sr, err := NewDemo(time.Millisecond).Stream(ctx, []*schema.Message{schema.UserMessage("hello")})
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	for i := 0; i < 3; i++ {
		m, err := sr.Recv()
		if err != nil || m.ReasoningContent == "" {
			t.Fatalf("chunk %d = %+v, %v; want thinking", i, m, err)
		}
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("a live demo stream holds a goroutine: %v", err)
	}
	cancel()
	if _, err := sr.Recv(); !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel Recv = %v, want context.Canceled", err)
	}
	if _, err := sr.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the error Recv = %v, want io.EOF", err)
	}
}

// Streamed with a pause between chunks, the demo sends every word of its
// reply once and ends with the usage, whose completion count is the
// number of chunks.
func TestDemoStreamPacedSendsTheWholeReplyAndUsage(t *testing.T) {
	t.Parallel()
	sr, err := NewDemo(100*time.Microsecond).Stream(context.Background(), []*schema.Message{schema.UserMessage("hello")})
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	var th, ans strings.Builder
	chunks := 0
	var usage *schema.TokenUsage
	for {
		m, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.ResponseMeta != nil {
			usage = m.ResponseMeta.Usage
			continue
		}
		chunks++
		th.WriteString(m.ReasoningContent)
		ans.WriteString(m.Content)
	}
	wantTh, wantAns := DemoReply("hello")
	if th.String() != wantTh || ans.String() != wantAns {
		t.Errorf("streamed %q / %q, want %q / %q", th.String(), ans.String(), wantTh, wantAns)
	}
	if usage == nil || usage.CompletionTokens != chunks {
		t.Errorf("usage %+v, want %d completion tokens", usage, chunks)
	}
}
