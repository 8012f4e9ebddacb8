package funclist

import (
	"cmp"
	"path"
	"slices"
	"strings"
)

// Suggest returns up to max corrections of a glob that matched none of
// names ("did you mean parse_*?" for `pasre_*`): globs that differ from
// it in the fewest literal characters and do match some name. The
// distance is an edit distance in which `*` matches any run of
// characters and `?` or a class one character for free, and each
// inserted, deleted, replaced or swapped (adjacent) literal costs 1. Only
// corrections within a third of the glob's literal characters (at least
// 1) are offered; the most widely matching come first.
func Suggest(g Glob, names []string, max int) []string {
	toks := tokens(g.Pattern)
	lits := 0
	star := false
	for _, t := range toks {
		switch t.kind {
		case tokLit:
			lits++
		case tokStar:
			star = true
		}
	}
	limit := lits / 3
	if limit < 1 {
		limit = 1
	}
	best := limit + 1
	counts := map[string]int{}
	var d dp
	for _, name := range names {
		rs := []rune(name)
		// Without a star every name character needs a token: a length
		// difference beyond the limit cannot come within it.
		if !star && absDiff(len(rs), len(toks)) > limit {
			continue
		}
		dist, fixed := d.align(toks, rs)
		if dist == 0 || dist > limit || dist > best {
			continue
		}
		if dist < best {
			best = dist
			clear(counts)
		}
		counts[fixed]++
	}
	out := make([]string, 0, len(counts))
	for s := range counts {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	if len(out) > max {
		out = out[:max]
	}
	return out
}

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

type tokKind uint8

const (
	tokLit   tokKind = iota // one literal character (escaped or not)
	tokAny                  // ?
	tokStar                 // *
	tokClass                // [...]
)

// A token is one element of a glob, with its text as written.
type token struct {
	kind tokKind
	r    rune   // tokLit
	text string // as written: "a", "\\*", "?", "*", "[a-z]"
}

// tokens splits a valid glob into its elements.
func tokens(p string) []token {
	var out []token
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '*':
			if len(out) > 0 && out[len(out)-1].kind == tokStar {
				continue // ** is *
			}
			out = append(out, token{kind: tokStar, text: "*"})
		case '?':
			out = append(out, token{kind: tokAny, text: "?"})
		case '\\':
			if i+1 < len(rs) {
				i++
				out = append(out, token{kind: tokLit, r: rs[i], text: `\` + string(rs[i])})
			}
		case '[':
			j := i + 1
			if j < len(rs) && rs[j] == '^' {
				j++
			}
			if j < len(rs) && rs[j] == ']' {
				j++ // a leading ] is a member
			}
			for j < len(rs) && rs[j] != ']' {
				if rs[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j, len(rs)-1)
			out = append(out, token{kind: tokClass, text: string(rs[i : j+1])})
			i = j
		default:
			out = append(out, token{kind: tokLit, r: rs[i], text: string(rs[i])})
		}
	}
	return out
}

// matches reports whether token t matches the one character r.
func (t token) matches(r rune) bool {
	switch t.kind {
	case tokLit:
		return t.r == r
	case tokAny:
		return true
	case tokClass:
		ok, _ := path.Match(t.text, string(r))
		return ok
	}
	return false
}

// dp holds the distance table between calls, to spare an allocation per
// name.
type dp struct{ cells []int }

// align returns the least cost of editing the glob toks into one that
// matches name, and that edited glob.
func (d *dp) align(toks []token, name []rune) (int, string) {
	P, N := len(toks), len(name)
	w := N + 1
	if cap(d.cells) < (P+1)*w {
		d.cells = make([]int, (P+1)*w)
	}
	c := d.cells[:(P+1)*w]
	at := func(i, j int) *int { return &c[i*w+j] }
	for j := 0; j <= N; j++ {
		*at(0, j) = j // insert every character
	}
	for i := 1; i <= P; i++ {
		t := toks[i-1]
		if t.kind == tokStar {
			*at(i, 0) = *at(i-1, 0)
		} else {
			*at(i, 0) = *at(i-1, 0) + 1
		}
		for j := 1; j <= N; j++ {
			var v int
			if t.kind == tokStar {
				v = min(*at(i-1, j), *at(i, j-1))
			} else {
				sub := 1
				if t.matches(name[j-1]) {
					sub = 0
				}
				v = min(*at(i-1, j-1)+sub, *at(i-1, j)+1, *at(i, j-1)+1)
				if d.swapped(toks, name, i, j) {
					v = min(v, *at(i-2, j-2)+1)
				}
			}
			*at(i, j) = v
		}
	}
	// Walk back along one cheapest path, writing the edited glob from its
	// end.
	var rev []string
	i, j := P, N
	lit := func(r rune) string { return escape(string(r)) }
	for i > 0 || j > 0 {
		v := *at(i, j)
		switch {
		case i > 0 && toks[i-1].kind == tokStar && *at(i-1, j) == v:
			// On a tie the star takes no more: the literals before it
			// then align with the name (fbi* -> fib*, not fi*).
			rev = append(rev, "*")
			i--
		case i > 0 && toks[i-1].kind == tokStar && j > 0 && *at(i, j-1) == v:
			j-- // the star takes one more character
		case i > 0 && (toks[i-1].kind == tokAny || toks[i-1].kind == tokClass) && *at(i-1, j)+1 == v:
			i-- // on a tie, drop a wildcard rather than a literal: fib? -> fib, not fi?
		case i > 0 && j > 0 && toks[i-1].kind != tokStar && toks[i-1].matches(name[j-1]) && *at(i-1, j-1) == v:
			rev = append(rev, toks[i-1].text)
			i, j = i-1, j-1
		case i > 1 && j > 1 && d.swapped(toks, name, i, j) && *at(i-2, j-2)+1 == v:
			rev = append(rev, lit(name[j-1]), lit(name[j-2]))
			i, j = i-2, j-2
		case i > 0 && j > 0 && toks[i-1].kind != tokStar && *at(i-1, j-1)+1 == v:
			rev = append(rev, lit(name[j-1])) // replaced
			i, j = i-1, j-1
		case i > 0 && *at(i-1, j)+1 == v:
			i-- // deleted
		default:
			rev = append(rev, lit(name[j-1])) // inserted
			j--
		}
	}
	slices.Reverse(rev)
	return *at(P, N), strings.Join(rev, "")
}

// swapped reports whether the literals toks[i-2], toks[i-1] appear
// swapped at name[j-2], name[j-1].
func (d *dp) swapped(toks []token, name []rune, i, j int) bool {
	if i < 2 || j < 2 {
		return false
	}
	a, b := toks[i-2], toks[i-1]
	return a.kind == tokLit && b.kind == tokLit && a.r != b.r && name[j-2] == b.r && name[j-1] == a.r
}
