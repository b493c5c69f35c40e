package knowledge

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
)

// Snowball reduces regular inflections ("returns", "returned" → "return")
// but not irregular ones: "wrote" and "written" never meet "write",
// "children" never meets "child", and a British "initialise" never meets
// an American "initialize". englishBase maps those forms to their base
// word before stemming, on both sides of the index (the table and its
// choices: english_forms.txt).

//go:embed english_forms.txt
var englishFormsTable string

// englishBase returns the base word of an irregular English form or a
// British spelling (lower case), or w itself.
func englishBase(w string) string {
	if base, ok := englishForms()[w]; ok {
		return base
	}
	return w
}

var englishForms = sync.OnceValue(func() map[string]string {
	m, err := readEnglishForms(englishFormsTable)
	if err != nil {
		// embedded and tested: a broken table is a build defect
		panic(fmt.Sprintf("knowledge: english_forms.txt: %v", err))
	}
	return m
})

// readEnglishForms parses lines "form base" ('#' starts a comment line).
func readEnglishForms(table string) (map[string]string, error) {
	m := make(map[string]string, 256)
	for i, line := range strings.Split(table, "\n") {
		if line = strings.TrimSpace(line); line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || f[0] != strings.ToLower(f[0]) || f[1] != strings.ToLower(f[1]) {
			return nil, fmt.Errorf("line %d: want two lower-case words, got %q", i+1, line)
		}
		if _, dup := m[f[0]]; dup {
			return nil, fmt.Errorf("line %d: %q listed twice", i+1, f[0])
		}
		m[f[0]] = f[1]
	}
	return m, nil
}
