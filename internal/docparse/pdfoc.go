package docparse

import (
	"reflect"

	"github.com/ledongthuc/pdf"
)

// optionalContent is what a viewer hides of a PDF's optional content
// (PDF 32000-1, 8.11: layers, "OCGs") when it opens the file: the groups
// its default configuration, /OCProperties /D, turns off. A reader never
// sees the text of a layer that is off (a draft's notes, a map's other
// language, a form's printing-only labels), so it is left out of the
// text; whatever cannot be read counts as visible, so that damage never
// costs text. A nil *optionalContent hides nothing.
type optionalContent struct {
	known, on, off map[objectID]bool // the groups of /OCGs, /ON and /OFF
	baseOff        bool              // /BaseState /OFF: a known group not in /ON is off
}

// Bounds of reading optional content in a damaged or hostile file: the
// groups read of each of the configuration's arrays, the nesting of a
// visibility expression (/VE), and the groups and expressions one
// membership dictionary may make us read. A map with a layer per street
// has a few hundred groups; a visibility expression is two or three deep.
const (
	maxOCGroups     = 1 << 12
	maxOCExprDepth  = 10
	maxOCMDElements = 1 << 10
)

// readOptionalContent reads the default configuration of the document's
// optional content; nil when it has none or it cannot be read.
func readOptionalContent(r *pdf.Reader) (oc *optionalContent) {
	defer func() {
		if recover() != nil {
			oc = nil
		}
	}()
	props := r.Trailer().Key("Root").Key("OCProperties")
	d := props.Key("D")
	if d.Kind() != pdf.Dict {
		return nil
	}
	oc = &optionalContent{baseOff: d.Key("BaseState").Name() == "OFF"}
	var complete bool
	oc.known, _ = groupSet(props.Key("OCGs"))
	oc.on, complete = groupSet(d.Key("ON"))
	// A group past the bound may be one /ON turns on: none is taken for off.
	oc.baseOff = oc.baseOff && complete
	oc.off, _ = groupSet(d.Key("OFF"))
	return oc
}

// groupSet is the objects an array of groups refers to, and whether all
// of them were read (false past maxOCGroups).
func groupSet(arr pdf.Value) (map[objectID]bool, bool) {
	set := map[objectID]bool{}
	for i := range min(arr.Len(), maxOCGroups) {
		if id, ok := idOf(arr.Index(i)); ok {
			set[id] = true
		}
	}
	return set, arr.Len() <= maxOCGroups
}

// objectID names a PDF object: its number and generation.
type objectID struct{ num, gen uint64 }

// idOf is the object v was read from. Groups are told apart by object
// alone (two layers may have the same dictionary, one on and one off),
// and the reader does not export it, so its field is read through
// reflection; ok is false for a value read from no object and if a
// version of the reader has renamed the field, which leaves every layer
// visible (and fails the TestAPDFsLayers tests).
func idOf(v pdf.Value) (objectID, bool) {
	ptr := reflect.ValueOf(v).FieldByName("ptr")
	if ptr.Kind() != reflect.Struct {
		return objectID{}, false
	}
	num, gen := ptr.FieldByName("id"), ptr.FieldByName("gen")
	if !num.CanUint() || !gen.CanUint() || num.Uint() == 0 {
		return objectID{}, false
	}
	return objectID{num.Uint(), gen.Uint()}, true
}

// hides reports whether content marked as optional with the value at
// path from v (an annotation's /OC; a page's /Properties /Name), an
// optional content group (OCG) or membership dictionary (OCMD), is hidden
// when the document opens. Reading its groups takes from budget; past it,
// hides panics with overBudget as the content walker does.
func (oc *optionalContent) hides(budget *textBudget, v pdf.Value, path ...string) (hidden bool) {
	if oc == nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			if _, over := p.(overBudget); over {
				panic(p)
			}
			hidden = false
		}
	}()
	for _, key := range path {
		v = v.Key(key)
	}
	if v.Kind() != pdf.Dict {
		return false
	}
	e := &ocEvaluation{oc: oc, budget: budget}
	if v.Key("Type").Name() == "OCMD" || v.Key("Type").IsNull() && (!v.Key("OCGs").IsNull() || !v.Key("VE").IsNull()) {
		visible, ok := e.membership(v)
		return ok && !visible
	}
	on, ok := e.groupOn(v)
	return ok && !on
}

// ocEvaluation is the reading of one membership dictionary, with what it
// has read so far counted against maxOCMDElements.
type ocEvaluation struct {
	oc     *optionalContent
	budget *textBudget
	read   int
}

// take counts one more element read; false past maxOCMDElements.
func (e *ocEvaluation) take() bool {
	if err := e.budget.op(); err != nil {
		panic(overBudget{err})
	}
	e.read++
	return e.read <= maxOCMDElements
}

// groupOn is the state of group v: off when /OFF lists it, or when the
// base state is off, it is one of the document's groups and /ON does not
// list it. ok is false when v is no group that can be read.
func (e *ocEvaluation) groupOn(v pdf.Value) (on, ok bool) {
	id, ok := idOf(v)
	if !ok || v.Kind() != pdf.Dict {
		return false, false
	}
	switch {
	case e.oc.off[id]:
		return false, true
	case e.oc.baseOff && e.oc.known[id] && !e.oc.on[id]:
		return false, true
	}
	return true, true
}

// membership is whether an OCMD shows its content: by its visibility
// expression (/VE) when it has one, as PDF 1.6 asks, else by its policy
// (/P) over its groups (/OCGs). ok is false when it cannot be read, and
// the content then counts as visible; so does an OCMD naming no group,
// which has no effect.
func (e *ocEvaluation) membership(v pdf.Value) (visible, ok bool) {
	if ve := v.Key("VE"); !ve.IsNull() {
		return e.expression(ve, 0)
	}
	groups := v.Key("OCGs")
	list := []pdf.Value{groups} // one group, or an array of them
	if groups.Kind() == pdf.Array {
		list = list[:0]
		for i := range groups.Len() {
			if !e.take() {
				return false, false
			}
			list = append(list, groups.Index(i))
		}
	}
	var nOn, nOff int
	for _, g := range list {
		// A null or damaged entry is left out, as the standard asks.
		switch on, ok := e.groupOn(g); {
		case !ok:
		case on:
			nOn++
		default:
			nOff++
		}
	}
	if nOn+nOff == 0 {
		return true, true
	}
	switch v.Key("P").Name() {
	case "AllOn":
		return nOff == 0, true
	case "AnyOff":
		return nOff > 0, true
	case "AllOff":
		return nOn == 0, true
	}
	return nOn > 0, true // AnyOn, the default
}

// expression evaluates a visibility expression: a group, or an array of
// /And, /Or or /Not and its operands, which are expressions themselves,
// at most maxOCExprDepth deep. ok is false when it cannot be read.
func (e *ocEvaluation) expression(v pdf.Value, depth int) (visible, ok bool) {
	if depth > maxOCExprDepth || !e.take() {
		return false, false
	}
	if v.Kind() == pdf.Dict {
		return e.groupOn(v)
	}
	n := v.Len()
	if n < 2 {
		return false, false
	}
	op := v.Index(0).Name()
	if op == "Not" {
		if n != 2 {
			return false, false
		}
		visible, ok := e.expression(v.Index(1), depth+1)
		return !visible, ok
	}
	if op != "And" && op != "Or" {
		return false, false
	}
	for i := 1; i < n; i++ {
		visible, ok := e.expression(v.Index(i), depth+1)
		if !ok {
			return false, false
		}
		// And stops at the first operand off, Or at the first on.
		if visible == (op == "Or") {
			return visible, true
		}
	}
	return op == "And", true
}
