package llm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chatpipe/chatpipe/internal/citation"
	"github.com/chatpipe/chatpipe/internal/terms"
)

// Limits of the demo's extractive answers.
const (
	demoMaxQuotes     = 3   // sentences quoted
	demoMinQuotes     = 2   // quoted when the passages have that many sentences
	demoMinSentence   = 8   // runes; shorter fragments are not worth quoting
	demoMaxSentence   = 280 // runes; longer sentences are cut
	demoQuestionRunes = 80  // of the question echoed in the thinking
)

// extractiveReply answers a prompt that carries a numbered context: the
// sentences of the passages sharing the most terms with the question
// (words, or character bigrams for Chinese, weighted by rarity) are
// quoted with their [n] numbers. A context with no passages
// (citation.NoPassages) gets a reply saying nothing was found. ok is false
// for a prompt without a context.
func extractiveReply(prompt string) (thinking, answer string, ok bool) {
	passages, rest := citation.ParseContext(prompt)
	question := demoQuestion(rest)
	zh := hasHan(question)
	if len(passages) == 0 {
		if !strings.Contains(prompt, citation.NoPassages) {
			return "", "", false
		}
		th, ans := noContextReply(question, zh)
		return th, ans, true
	}
	quotes := pickSentences(question, passages)

	var b strings.Builder
	if zh {
		b.WriteString("[演示模型] 离线摘录式回答：以下句子直接引自知识库，并非由语言模型生成。\n\n")
	} else {
		b.WriteString("[demo model] Offline extractive answer: the sentences below are quoted from the knowledge base, " +
			"not written by a language model.\n\n")
	}
	for _, s := range quotes {
		if zh {
			b.WriteString("- “" + s.text + "” [" + strconv.Itoa(s.passage) + "]\n")
		} else {
			b.WriteString("- \"" + s.text + "\" [" + strconv.Itoa(s.passage) + "]\n")
		}
	}
	q := truncateQuestion(question)
	if zh {
		b.WriteString("\n如需生成式回答，请在 config.yaml 的 models 中配置真实的大模型。")
		thinking = fmt.Sprintf("离线演示，没有语言模型：我把 %d 段编号资料拆成句子，引用与问题“%s”共有词语最多的 %d 句，并标注出处编号。",
			len(passages), q, len(quotes))
	} else {
		b.WriteString("\nFor generated answers, point a model in config.yaml at a real LLM.")
		thinking = fmt.Sprintf("Offline demo, no language model: I split the %d numbered passages into sentences "+
			"and quote the %d that share the most terms with the question \"%s\", each with its passage number.",
			len(passages), len(quotes), q)
	}
	return thinking, b.String(), true
}

func noContextReply(question string, zh bool) (thinking, answer string) {
	q := truncateQuestion(question)
	if zh {
		return "知识库没有返回与“" + q + "”相关的段落；离线演示模型无法凭通用知识回答，所以如实说明。",
			"[演示模型] 知识库中没有找到与这个问题相关的内容；离线演示模型无法凭通用知识回答。" +
				"请换个说法提问，或添加涵盖该内容的文档（POST /api/v1/knowledge/documents）。"
	}
	return "The knowledge base returned no passage for \"" + q + "\"; as the offline demo I cannot answer " +
			"from general knowledge, so I say so.",
		"[demo model] I found nothing about this in the knowledge base, and as the offline demo model I cannot " +
			"answer from general knowledge. Try other words, or add a document that covers it " +
			"(POST /api/v1/knowledge/documents)."
}

// demoQuestion finds the question in what surrounds the context: the text
// after the last "Question:" label (the default rag_prompt's), else all of it.
func demoQuestion(rest string) string {
	for _, label := range []string{"Question:", "问题：", "问题:"} {
		if i := strings.LastIndex(rest, label); i >= 0 {
			return strings.TrimSpace(rest[i+len(label):])
		}
	}
	return strings.TrimSpace(rest)
}

func truncateQuestion(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if utf8.RuneCountInString(q) > demoQuestionRunes {
		q = string([]rune(q)[:demoQuestionRunes]) + "…"
	}
	return q
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// sentence is a quotable sentence of a passage.
type sentence struct {
	text    string
	passage int // the passage's [n]
	pos     int // position among all sentences, for stable ties
	terms   terms.Set
	score   float64
}

// pickSentences returns the two or three sentences that best match the
// question, best first. Each term of the question counts by its rarity
// among the sentences (idf), so a word every sentence has decides nothing.
// Ties go to the better-ranked passage, then the earlier sentence.
func pickSentences(question string, passages []citation.Passage) []sentence {
	var all []sentence
	for _, p := range passages {
		for _, text := range splitSentences(p.Content) {
			all = append(all, sentence{text: text, passage: p.Index, pos: len(all), terms: terms.NewSet(text)})
		}
	}
	if len(all) == 0 {
		for _, p := range passages[:min(demoMinQuotes, len(passages))] {
			text := clip(strings.Join(strings.Fields(p.Content), " "))
			if text != "" {
				all = append(all, sentence{text: text, passage: p.Index, pos: len(all)})
			}
		}
		return all
	}
	q := terms.NewSet(question)
	for t := range q {
		df := 0
		for _, s := range all {
			if _, ok := s.terms[t]; ok {
				df++
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + float64(len(all))/float64(df))
		for i := range all {
			if _, ok := all[i].terms[t]; ok {
				all[i].score += idf
			}
		}
	}
	ranked := slices.Clone(all)
	slices.SortStableFunc(ranked, func(a, b sentence) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.passage, b.passage); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	best := ranked[0].score
	if best == 0 { // nothing in common: the retriever's best passages speak first
		return firstSentences(all, demoMinQuotes)
	}
	var picks []sentence
	seen := map[string]bool{}
	for _, s := range ranked {
		if len(picks) == demoMaxQuotes || s.score == 0 || len(picks) >= demoMinQuotes && s.score < best/2 {
			break
		}
		if !seen[s.text] {
			seen[s.text] = true
			picks = append(picks, s)
		}
	}
	if len(picks) == 1 { // one match: the sentence after it (or before) usually continues the thought
		for _, pos := range []int{picks[0].pos + 1, picks[0].pos - 1} {
			if pos >= 0 && pos < len(all) && all[pos].passage == picks[0].passage && !seen[all[pos].text] {
				picks = append(picks, all[pos])
				break
			}
		}
	}
	return picks
}

// firstSentences returns the first sentence of each passage, in order, up to n.
func firstSentences(all []sentence, n int) []sentence {
	var out []sentence
	for i, s := range all {
		if len(out) == n {
			break
		}
		if i == 0 || all[i-1].passage != s.passage {
			out = append(out, s)
		}
	}
	return out
}

// splitSentences cuts passage content into quotable sentences: headings,
// code fences and list markers are left out, and sentences end at . ! ?
// followed by a space, at 。！？；, or at a line break.
func splitSentences(content string) []string {
	var out []string
	inFence := false
	for raw := range strings.SplitSeq(content, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			inFence = !inFence // code is quoted as code, never as a sentence of the answer
			continue
		}
		if inFence || strings.HasPrefix(raw, "    ") || strings.HasPrefix(raw, "\t") ||
			line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "|") {
			continue
		}
		line = strings.TrimSpace(strings.TrimLeft(line, "-*>• "))
		if k := strings.Index(line, ". "); k > 0 && k <= 3 && isDigits(line[:k]) { // "1. item"
			line = line[k+2:]
		}
		start := 0
		for i, r := range line {
			end := i + utf8.RuneLen(r)
			switch r {
			case '。', '！', '？', '；':
			case '.', '!', '?':
				// Not an end: "1.5", "e.g.x", or "go run ." where the dot is a word of its own.
				if end < len(line) && line[end] != ' ' || i > 0 && line[i-1] == ' ' {
					continue
				}
			default:
				continue
			}
			out = appendSentence(out, line[start:end])
			start = end
		}
		out = appendSentence(out, line[start:])
	}
	return out
}

func appendSentence(out []string, s string) []string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) < demoMinSentence {
		return out
	}
	return append(out, clip(s))
}

func clip(s string) string {
	if utf8.RuneCountInString(s) <= demoMaxSentence {
		return s
	}
	return string([]rune(s)[:demoMaxSentence]) + "…"
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// splitForStream cuts s into stream pieces: after each space or line
// break, and every four characters inside text without spaces (Chinese),
// so an extractive answer streams like a model's would.
func splitForStream(s string) []string {
	var out []string
	start, run := 0, 0
	for i, r := range s {
		end := i + utf8.RuneLen(r)
		run++
		if r == ' ' || r == '\n' || (r >= utf8.RuneSelf && run >= 4) {
			out = append(out, s[start:end])
			start, run = end, 0
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
