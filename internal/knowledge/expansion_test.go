package knowledge

import (
	"slices"
	"strings"
	"testing"
)

func TestExpansionTermsAreRelatedWordsNotAlreadyInTheQuery(t *testing.T) {
	got := ExpansionTerms("如何修改文件")
	if !slices.Contains(got, "变更") {
		t.Errorf("ExpansionTerms(如何修改文件) = %v, want 变更 (CC-CEDICT: both 'to alter') among them", got)
	}
	own := QueryTerms("如何修改文件")
	for _, term := range got {
		if slices.Contains(own, term) {
			t.Errorf("expansion term %q is one of the query's own terms", term)
		}
		if len([]rune(term)) == 1 {
			t.Errorf("expansion term %q is a single character: expansions add bigrams only", term)
		}
	}
	if len(got) > maxExpansionTerms {
		t.Errorf("%d expansion terms, want at most %d", len(got), maxExpansionTerms)
	}
	for _, q := range []string{"", "how do I change a file", "修", "🚀"} {
		if got := ExpansionTerms(q); len(got) != 0 {
			t.Errorf("ExpansionTerms(%q) = %v, want none", q, got)
		}
	}
	long := ExpansionTerms("如何修改文件的读写执行权限并删除目录再复制一个文件夹及其里面的全部内容")
	if len(long) != maxExpansionTerms {
		t.Errorf("a long query's expansion has %d terms, want the bound %d", len(long), maxExpansionTerms)
	}
}

func TestHanWordsAreTheSubstringsOfTwoToFourCharacters(t *testing.T) {
	got := hanWords("改名字 a 文件夹里")
	want := []string{"改名字", "改名", "名字", "文件夹里", "文件夹", "文件", "件夹里", "件夹", "夹里"}
	if !slices.Equal(got, want) {
		t.Errorf("hanWords = %v, want %v", got, want)
	}
}

func TestAddExpansionWeighsTheExpansionBelowTheQuery(t *testing.T) {
	hit := func(id string, score float64) Hit { return Hit{ChunkID: id, Score: score} }
	ids := func(hs []Hit) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.ChunkID)
		}
		return out
	}
	for _, tc := range []struct {
		name            string
		query, expanded []Hit
		limit           int
		want            []string
		wantScores      []float64
	}{
		{"no expansion keeps the query's ranking", []Hit{hit("a", 3), hit("b", 1)}, nil, 10,
			[]string{"a", "b"}, []float64{3, 1}},
		{"the expansion adds its weighted score", []Hit{hit("a", 3), hit("b", 2.5)}, []Hit{hit("b", 4)}, 10,
			[]string{"b", "a"}, []float64{2.5 + 0.3*4, 3}},
		{"a chunk found only by the expansion comes after the query's", []Hit{hit("a", 1)}, []Hit{hit("c", 3)}, 10,
			[]string{"a", "c"}, []float64{1, 0.3 * 3}},
		{"the limit applies to the combined ranking", []Hit{hit("a", 3), hit("b", 2)}, []Hit{hit("c", 20)}, 2,
			[]string{"c", "a"}, []float64{6, 3}},
		{"ties keep the query's order", []Hit{hit("a", 0.3), hit("b", 0.3)}, []Hit{hit("c", 1)}, 10,
			[]string{"a", "b", "c"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := addExpansion(tc.query, tc.expanded, func(Hit) float64 { return 0.3 }, tc.limit)
			if !slices.Equal(ids(got), tc.want) {
				t.Fatalf("order = %v, want %v", ids(got), tc.want)
			}
			for i, w := range tc.wantScores {
				if d := got[i].Score - w; d > 1e-9 || d < -1e-9 {
					t.Errorf("%s score = %v, want %v", got[i].ChunkID, got[i].Score, w)
				}
			}
		})
	}
}

func TestBridgeTermsAreTheEnglishStemsOfTheChineseWordsGlosses(t *testing.T) {
	got := BridgeTerms("如何修改文件")
	for _, want := range []string{"modifi", "alter"} { // 修改: amend, alter, modify
		if !slices.Contains(got, want) {
			t.Errorf("BridgeTerms(如何修改文件) = %v, want the stem %q among them", got, want)
		}
	}
	for _, term := range got {
		if strings.ContainsFunc(term, isHan) {
			t.Errorf("bridge term %q holds Chinese", term)
		}
	}
	if own := BridgeTerms("modify 修改"); slices.Contains(own, "modifi") {
		t.Errorf("BridgeTerms(modify 修改) = %v repeats the query's own term modifi", own)
	}
	for _, q := range []string{"", "how do I change a file", "修", "🚀"} {
		if got := BridgeTerms(q); len(got) != 0 {
			t.Errorf("BridgeTerms(%q) = %v, want none", q, got)
		}
	}
	if long := BridgeTerms("如何修改文件的读写执行权限并删除目录再复制一个文件夹及其里面的全部内容"); len(long) > maxExpansionTerms {
		t.Errorf("a long query's bridge has %d terms, want at most %d", len(long), maxExpansionTerms)
	}
}

func TestTheBridgeCountsMoreOnAPageWithoutChinese(t *testing.T) {
	english := Hit{Title: "open.2", Content: "open and possibly create a file"}
	chinese := Hit{Title: "chmod.1", Content: "chmod - 改变文件模式比特位 (change file mode bits)"}
	if got := bridgeWeight(english); got != bridgeForeignWeight {
		t.Errorf("bridge weight of an English chunk = %v, want %v", got, bridgeForeignWeight)
	}
	if got := bridgeWeight(chinese); got != bridgeChineseWeight {
		t.Errorf("bridge weight of a chunk holding Chinese = %v, want %v", got, bridgeChineseWeight)
	}
	if bridgeChineseWeight >= bridgeForeignWeight {
		t.Error("a chunk that the question's own words can reach must count the bridge less than one only the bridge reaches")
	}
}
