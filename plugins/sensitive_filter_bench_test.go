package plugins

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chatpipe/chatpipe/eventbus"
	"github.com/chatpipe/chatpipe/pipeline/pipelinetest"
)

// benchWords returns n words: a few that occur in the bench answers, the
// rest random letter strings (of Latin letters, or CJK characters for
// zh) whose prefixes the answers hit all the time, so the automaton
// keeps holding back and releasing text as it would with a real list.
func benchWords(n int, zh bool) []string {
	words := []string{"password", "secret", "api key", "confidential", "机密", "内部资料", "密码"}
	rng := rand.New(rand.NewPCG(7, 11))
	const latin = "abcdefghijklmnopqrstuvwxyz"
	cjk := []rune("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严")
	for len(words) < n {
		var b strings.Builder
		for k := 3 + rng.IntN(6); k > 0; k-- {
			if zh {
				b.WriteRune(cjk[rng.IntN(len(cjk))])
			} else {
				b.WriteByte(latin[rng.IntN(len(latin))])
			}
		}
		words = append(words, b.String())
	}
	return words
}

const benchAnswerEN = "To resume a stream after a dropped connection, reconnect with the Last-Event-ID header " +
	"or the after query parameter. The server replays the missed events and then continues live. Never share " +
	"your password or api key in a chat; keep confidential data out of prompts. Every event carries a sequence " +
	"number, so a client can tell whether it missed anything, and the answer is saved exactly as it was streamed. "

const benchAnswerZH = "网络断开以后，客户端使用 Last-Event-ID 请求头重新连接，即可恢复流。服务器会先重放错过的事件，" +
	"然后继续实时推送。不要在对话里透露密码或机密，内部资料请勿外传。每个事件都带有序号，客户端可以判断是否漏收，" +
	"答案会按推送的样子原样保存。"

// BenchmarkSensitiveFilterDelta is the filter's cost per streamed delta
// with a 1,000-word mask list: the output filter's Emit of one answer
// delta (of about four characters, as models stream them), the scan,
// hold-back, masking and the emit to the next emitter included.
func BenchmarkSensitiveFilterDelta(b *testing.B) {
	for _, tc := range []struct {
		name   string
		zh     bool
		answer string
	}{
		{"en", false, benchAnswerEN},
		{"zh", true, benchAnswerZH},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := newMatcher(benchWords(1000, tc.zh), nil, nil, 64)
			var deltas []eventbus.Event
			for _, part := range pipelinetest.Split(tc.answer, len([]rune(tc.answer))/4) {
				deltas = append(deltas, eventbus.Delta(eventbus.TypeAnswerDelta, part))
			}
			released := 0
			f := &outputFilter{inner: eventbus.EmitterFunc(func(ev eventbus.Event) { released += len(ev.Text) }),
				cancel: func(error) {}, answer: scanner{m: m}, thinking: scanner{m: m}}
			f.Emit(eventbus.Event{Type: eventbus.TypeAnswerStart})
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				f.Emit(deltas[i%len(deltas)])
			}
			b.StopTimer()
			if f.isStopped() || released == 0 {
				b.Fatal("nothing released")
			}
		})
	}
}
