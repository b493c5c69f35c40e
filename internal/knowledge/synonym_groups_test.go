package knowledge

import (
	"slices"
	"strings"
	"testing"

	"github.com/kljensen/snowball/english"

	"github.com/chatpipe/chatpipe/internal/knowledge/synonyms"
)

func mustGroups(t *testing.T, text string) *SynonymGroups {
	t.Helper()
	parsed, err := synonyms.ParseGroups(text)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewSynonymGroups(parsed)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSynonymGroupsAddTheOtherWordsOfAMatchedGroup(t *testing.T) {
	g := mustGroups(t, "delete, remove, get rid of\ncore dump, crash\n删除, 移除, 删掉\n开头, 起始\nlogin, log in")
	for _, c := range []struct {
		query string
		want  []string
	}{
		// any inflection of an English word; the group's other words
		// stemmed, the query's own words left out
		{"Deleting old files", []string{"remov", "get", "rid"}},
		{"remove and delete", []string{"get", "rid"}},
		// a phrase matches only when the question holds all its words
		{"the core of the matter", nil},
		{"where do core dumps go", []string{"crash"}},
		// function words count in a phrase, and its words must come in order
		{"how do I get rid of it", []string{"delet", "remov"}},
		{"get the rid", nil},
		{"where is the log file", nil},
		{"I cannot log in", []string{"login"}},
		// Chinese as written; bigrams of the related words
		{"怎么删除日志", []string{"移除", "删掉"}},
		// a potential complement split the verb: 删不掉 holds 删掉
		{"日志删不掉", []string{"删除", "移除"}},
		{"只看开头", []string{"起始"}},
		{"nothing related here", nil},
	} {
		if got := g.terms(c.query, QueryTerms(c.query)); !slices.Equal(got, c.want) {
			t.Errorf("terms(%q) = %q, want %q", c.query, got, c.want)
		}
	}
	var none *SynonymGroups
	if got := none.terms("delete", []string{"delet"}); got != nil {
		t.Errorf("nil groups gave %q", got)
	}
}

func TestSynonymGroupsRefuseEntriesSearchCannotUse(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"bill, invoice\n删, 移除", `line 2: "删" is a single character`},
		{"IP地址, 网址", `line 1: "ip地址" mixes a script written without spaces`},
		{"파일 삭제, 지우기", `"파일 삭제" mixes a script written without spaces`},
		{"invoice, bill\nthe, invoice", `line 2: "the" has only function words`},
		{"..., ellipsis", `"..." has no letters or digits`},
		{"c++, cpp", `"c++" is searched as "c", too short`},
		{"工单, " + strings.Repeat("长", 17), "may have at most 16"},
	} {
		parsed, err := synonyms.ParseGroups(c.text)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewSynonymGroups(parsed); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSynonymGroups(%q) = %v, want an error containing %q", c.text, err, c.want)
		}
	}
}

func TestTheBuiltinSynonymGroupsCompile(t *testing.T) {
	g, err := NewSynonymGroups(synonyms.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	if got := g.terms("how to erase a file", QueryTerms("how to erase a file")); !slices.Contains(got, "delet") {
		t.Errorf("erase brought %q, want delete's stem among them", got)
	}
}

func TestEnglishFormsMeetTheirBaseWord(t *testing.T) {
	for _, pair := range [][2]string{
		{"wrote", "write"}, {"written", "writes"}, {"children", "child"}, {"indices", "index"},
		{"initialise", "initialize"}, {"initialised", "initializing"}, {"behaviour", "behavior"}, {"sent", "sending"},
	} {
		if a, b := Terms(pair[0]), Terms(pair[1]); !slices.Equal(a, b) {
			t.Errorf("Terms(%q) = %q, Terms(%q) = %q; want the same", pair[0], a, pair[1], b)
		}
	}
	// words of another meaning are left alone
	for _, w := range []string{"left", "found", "bit", "data"} {
		if got := Terms(w)[0]; got != stemOnly(w) {
			t.Errorf("Terms(%q) = %q, want Snowball's own stem %q", w, got, stemOnly(w))
		}
	}
}

func TestReadEnglishFormsRefusesMalformedLines(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"wrote write\nran", "line 2: want two lower-case words"},
		{"Wrote write", "line 1"},
		{"ran run\nran run", `line 2: "ran" listed twice`},
	} {
		if _, err := readEnglishForms(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("readEnglishForms(%q) = %v, want an error containing %q", c.text, err, c.want)
		}
	}
}

// stemOnly is Snowball's stem of w, without englishBase.
func stemOnly(w string) string { return english.Stem(w, false) }
