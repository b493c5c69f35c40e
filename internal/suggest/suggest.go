// Package suggest finds the name an operator most likely meant when they
// wrote one that does not exist (a config key, a plugin, a variable), for
// "did you mean …?" in error messages.
package suggest

// Closest returns the candidate nearest to name by edit distance, or ""
// when none is near enough to be a likely typo (more than a third of the
// name would have to change). Ties go to the alphabetically first.
func Closest(name string, candidates []string) string {
	best, bestD := "", len(name)/3+1
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (config names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
