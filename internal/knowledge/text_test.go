package knowledge

import (
	"reflect"
	"strings"
	"testing"
)

func TestHTMLToText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, html, want string
	}{
		{"headings and paragraphs",
			`<h1>Title</h1><p>First   para
			graph.</p><h2>Sub <em>head</em></h2><div>Block</div>`,
			"# Title\n\nFirst para graph.\n\n## Sub head\n\nBlock"},
		{"scripts styles and head are dropped",
			`<html><head><style>p{}</style><script>var x = "<p>no</p>";</script></head>
			<body><noscript>enable js</noscript><p>Kept</p><template><p>no</p></template><script>alert(1)</script></body></html>`,
			"Kept"},
		{"title becomes the heading when there is no h1",
			`<title> Page  title </title><p>Body</p>`,
			"# Page title\n\nBody"},
		{"title is not added when there is an h1",
			`<title>Page</title><h1>Real</h1>`,
			"# Real"},
		{"lists",
			`<ul><li>one</li><li>two <b>bold</b></li></ul><ol><li>a</li><li>b<ul><li>nested</li></ul></li></ol>`,
			"- one\n- two bold\n\n1. a\n2. b\n\n  - nested"},
		{"line breaks and entities",
			`<p>a<br>b &amp; c &lt;tag&gt; &#20013;</p>`,
			"a\nb & c <tag> 中"},
		{"tables",
			`<table><tr><th>k</th> <th>v</th></tr><tr><td>1</td><td>2</td></tr></table>`,
			"k | v\n1 | 2"},
		{"pre keeps whitespace in a fence",
			"<p>Run:</p><pre><code>go run .\n  --flag</code></pre>",
			"Run:\n\n```\ngo run .\n  --flag\n```"},
		{"pre holding a fence gets a longer fence",
			"<pre>```\nx\n```</pre>",
			"````\n```\nx\n```\n````"},
		{"Chinese", `<h2>恢复流</h2><p>断线后<strong>继续</strong>读取。</p>`, "## 恢复流\n\n断线后继续读取。"},
		{"empty", `<html><body>  </body></html>`, ""},
		{"not html at all", `plain text`, "plain text"},
	} {
		if got, err := HTMLToText(tc.html); err != nil || got != tc.want {
			t.Errorf("%s: HTMLToText =\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}

func TestHTMLToTextFeedsTheChunkerHeadings(t *testing.T) {
	t.Parallel()
	text, _ := HTMLToText(`<h1>Guide</h1><p>Intro.</p><h2>Install</h2><p>Steps.</p>`)
	chunks := (Chunker{TargetTokens: 100}).Markdown(text)
	if got := headings(chunks); !reflect.DeepEqual(got, []string{"Guide", "Guide > Install"}) {
		t.Errorf("headings = %q", got)
	}
}

func TestTerms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"hello", "world"}},
		{"Last-Event-ID v2.5", []string{"last", "event", "id", "v2", "5"}},
		{"知识库", []string{"知", "知识", "识", "识库", "库"}},
		{"库", []string{"库"}},
		{"用 Last-Event-ID 重新连接", []string{"用", "last", "event", "id", "重", "重新", "新", "新连", "连", "连接", "接"}},
		{"中文English混合", []string{"中", "中文", "文", "english", "混", "混合", "合"}},
		{"ひらがな", []string{"ひ", "ひら", "ら", "らが", "が", "がな", "な"}},
		{"한국어", []string{"한", "한국", "국", "국어", "어"}},
		{"Ünïcödé ÉCOLE", []string{"unicod", "ecol"}},
		{"Items returned, returns", []string{"item", "return", "return"}},
		{"utf8 x86", []string{"utf8", "x86"}},
		{"支持ＰＤＦ，Ｖ２", []string{"支", "支持", "持", "pdf", "v2"}}, // full width
		{"ｚｅｂｒａｆｉｓｈ Ｒｅｔｕｒｎｓ", []string{"zebrafish", "return"}},
		{"ｶｰﾄﾞ", []string{"ｶ", "ｰ", "ﾄ", "ﾞ"}},                             // half-width katakana: not folded
		{"文件系\n统", []string{"文", "文件", "件", "件系", "系", "系统", "统"}},         // a line wrap inside a word
		{"称为   分区", []string{"称", "称为", "为", "为分", "分", "分区", "区"}},        // justification spaces
		{"文件\n\n系统", []string{"文", "文件", "件", "系", "系统", "统"}},             // a paragraph break is no wrap
		{"系统 Linux 内核", []string{"系", "系统", "统", "linux", "内", "内核", "核"}}, // other words still separate
		{"🚀 ?!。，", nil},
		{"", nil},
	} {
		if got := Terms(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Terms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := IndexText("Hello 知识库"); got != "hello 知 知识 识 识库 库" {
		t.Errorf("IndexText = %q", got)
	}
}

func TestQueryTermsDropStopWordsDeduplicateAndCap(t *testing.T) {
	t.Parallel()
	if got, want := QueryTerms("How do I resume the stream? resume!"), []string{"resum", "stream"}; !reflect.DeepEqual(got, want) {
		t.Errorf("QueryTerms = %q, want %q", got, want)
	}
	if got, want := QueryTerms("what is it"), []string{"what", "is", "it"}; !reflect.DeepEqual(got, want) {
		t.Errorf("only stop words: QueryTerms = %q, want them kept", got)
	}
	long := strings.Repeat("word ", 10)
	for i := range 200 {
		long += " w" + strings.Repeat("x", i%50) + string(rune('a'+i%26))
	}
	if got := QueryTerms(long); len(got) != maxQueryTerms {
		t.Errorf("%d terms, want the cap %d", len(got), maxQueryTerms)
	}
}

func TestWordQueryTermsLeaveOutTheCharactersOfLongerRuns(t *testing.T) {
	t.Parallel()
	if got, want := WordQueryTerms("怎么取消 the 生成。库"), []string{"怎么", "么取", "取消", "生成", "库"}; !reflect.DeepEqual(got, want) {
		t.Errorf("WordQueryTerms = %q, want %q", got, want)
	}
	if got, want := QueryTerms("取消。库"), []string{"取", "取消", "消", "库"}; !reflect.DeepEqual(got, want) {
		t.Errorf("QueryTerms = %q, want %q", got, want)
	}
}

func TestLeadIsTheFirstParagraphThatIsNoHeading(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 100)
	for _, tc := range []struct{ in, want string }{
		{"# fork.2\nfork - create a child process\n\n## LIBRARY\n\nStandard C library", "fork - create a child process"},
		{"# 标题\n\n## 概述\nls - 列出目录内容\n第二行\n\n## 描述", "ls - 列出目录内容\n第二行"},
		{"First line\nsecond line\n# Heading\nbody", "First line\nsecond line"},
		{"#include <stdio.h>\nint main", "#include <stdio.h>\nint main"},
		{"# Only headings\n\n## Here\n", ""},
		{"", ""},
		{long, strings.TrimSpace(long[:maxLeadBytes])},
		{strings.Repeat("长", 200), strings.Repeat("长", maxLeadBytes/3)},
		{"# Title\n\n" + strings.Repeat(" \n", LeadWindow) + "too far", ""},
	} {
		if got := Lead(tc.in); got != tc.want {
			t.Errorf("Lead(%.40q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got, want := TitleText("fork.2", "fork - create a child process"), "fork.2\nfork - create a child process"; got != want {
		t.Errorf("TitleText = %q, want %q", got, want)
	}
	if got := TitleText("Notes", "# Notes"); got != "Notes" {
		t.Errorf("TitleText without a lead = %q, want the title", got)
	}
}

func TestEmbeddingTextCarriesTheLeadUnlessTheChunkHoldsIt(t *testing.T) {
	t.Parallel()
	const lead = "fork - create a child process"
	for _, tc := range []struct{ title, heading, content, want string }{
		{"fork.2", "fork.2 > DESCRIPTION", "The child has its own PID.", "fork.2 > DESCRIPTION\n" + lead + "\n\nThe child has its own PID."},
		{"fork.2", "", lead + "\n\nLIBRARY", "fork.2\n\n" + lead + "\n\nLIBRARY"},
		{"", "", "The child has its own PID.", lead + "\n\nThe child has its own PID."},
	} {
		if got := embeddingText(tc.title, lead, tc.heading, tc.content); got != tc.want {
			t.Errorf("embeddingText(%q, lead, %q, %q) = %q, want %q", tc.title, tc.heading, tc.content, got, tc.want)
		}
	}
	if got, want := embeddingText("Guide", "", "Install", "Run it."), "Guide > Install\n\nRun it."; got != want {
		t.Errorf("without a lead: %q, want %q", got, want)
	}
}

func TestUploadNameIsTheFileNameAsShown(t *testing.T) {
	for sent, want := range map[string]string{
		"report.pdf":               "report.pdf",
		`C:\Users\ann\notes.md`:    "notes.md",
		"../../etc/passwd":         "passwd",
		"report\u202efdp.exe":      "reportfdp.exe",
		"zero\u200bwidth\u00ad.md": "zerowidth.md",
		"line\u2028break.txt":      "linebreak.txt",
		"tag\U000E0041s.md":        "tags.md",
		"\u3164.md":                ".md",
		"notes.":                   "notes",
		"Persian\u200cname.txt":    "Persian\u200cname.txt", // a zero-width non-joiner is spelling
		"":                         "",
		"..":                       "",
		"/":                        "",
		"ctrl\x01name.txt":         "ctrlname.txt",
	} {
		if got := UploadName(sent); got != want {
			t.Errorf("UploadName(%q) = %q, want %q", sent, got, want)
		}
	}
}
