package plugins

import (
	"fmt"
	"regexp"
	"regexp/syntax"
)

// compiledPattern is one configured regular expression: the matcher
// itself, and the expression for the texts a match of it could still
// grow from (see extendable).
type compiledPattern struct {
	re       *regexp.Regexp
	extend   string
	blocking bool
}

// compilePattern compiles a configured pattern, case-insensitive and
// leftmost-longest (a mask covers the whole match). Patterns that match
// the empty string are refused: they would match everywhere.
func compilePattern(pattern string, blocking bool) (compiledPattern, error) {
	re, err := regexp.Compile("(?i)" + pattern)
	if err != nil {
		return compiledPattern{}, err
	}
	if re.MatchString("") {
		return compiledPattern{}, fmt.Errorf("%q matches the empty string", pattern)
	}
	re.Longest()
	parsed, err := syntax.Parse("(?i)"+pattern, syntax.Perl)
	if err != nil {
		return compiledPattern{}, err
	}
	return compiledPattern{re: re, extend: extendable(parsed.Simplify()).String(), blocking: blocking}, nil
}

// extendable returns an expression for the strings s that a match of re
// can grow from: s+t matches re for some non-empty t. A scanner holds back
// the longest suffix of the text that it matches, and no more.
//
// Assertions (^, $, \b) are treated as matching nothing that can grow, or
// anything where that is the safe side: the result may match more than
// the exact set, which only holds back a little more, never less.
func extendable(re *syntax.Regexp) *syntax.Regexp {
	switch re.Op {
	case syntax.OpLiteral:
		// The proper prefixes: "", r0, r0r1, …, all but the last rune.
		acc := &syntax.Regexp{Op: syntax.OpEmptyMatch}
		for k := len(re.Rune) - 2; k >= 0; k-- {
			lit := &syntax.Regexp{Op: syntax.OpLiteral, Flags: re.Flags, Rune: []rune{re.Rune[k]}}
			acc = quest(concat(lit, acc))
		}
		return acc
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return &syntax.Regexp{Op: syntax.OpEmptyMatch}
	case syntax.OpCapture:
		return extendable(re.Sub[0])
	case syntax.OpQuest:
		return extendable(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		// Any number of whole repetitions, then the start of one more.
		return concat(&syntax.Regexp{Op: syntax.OpStar, Flags: re.Flags, Sub: []*syntax.Regexp{re.Sub[0]}},
			extendable(re.Sub[0]))
	case syntax.OpConcat:
		// E(a b c) = E(a) | a E(b c)
		acc := extendable(re.Sub[len(re.Sub)-1])
		for k := len(re.Sub) - 2; k >= 0; k-- {
			acc = alternate(extendable(re.Sub[k]), concat(re.Sub[k], acc))
		}
		return acc
	case syntax.OpAlternate:
		subs := make([]*syntax.Regexp, len(re.Sub))
		for i, sub := range re.Sub {
			subs[i] = extendable(sub)
		}
		return &syntax.Regexp{Op: syntax.OpAlternate, Sub: subs}
	default: // empty match, assertions, no match: nothing grows from them
		return &syntax.Regexp{Op: syntax.OpNoMatch}
	}
}

func concat(a, b *syntax.Regexp) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{a, b}}
}

func alternate(a, b *syntax.Regexp) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpAlternate, Sub: []*syntax.Regexp{a, b}}
}

func quest(a *syntax.Regexp) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpQuest, Sub: []*syntax.Regexp{a}}
}
