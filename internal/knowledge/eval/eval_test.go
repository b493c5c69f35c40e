package eval

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A question is of the kind keyword search cuts it as: a script written
// without spaces anywhere in it makes it CJK, whatever else it holds.
func TestScriptFollowsHowKeywordSearchCutsAQuestion(t *testing.T) {
	for text, want := range map[string]string{
		"how do I undo a commit":      ScriptOther,
		"grep 怎么递归搜索":                 ScriptCJK,
		"ファイルを削除する":                   ScriptCJK,
		"파일 삭제":                       ScriptCJK,
		"ลบไฟล์อย่างไร":               ScriptCJK,
		"Как удалить файл？":           ScriptOther, // full-width question mark
		"delete the file 🙂 — quickly": ScriptOther,
		"":                            ScriptOther,
	} {
		if got := Script(text); got != want {
			t.Errorf("Script(%q) = %s, want %s", text, got, want)
		}
	}
}
