// Package escape is the one rule for printing text that comes from
// outside ftpatch: symbol names and source paths read from a binary;
// names, paths and arguments read from a trace. Such text may hold
// control characters (an escape sequence that clears the screen, or that
// writes the terminal's clipboard, OSC 52), a newline that breaks a
// line-oriented format (folded stacks, a report's rows), or bytes that
// are not UTF-8; every text view prints it through this package.
//
// A character that is not printable (strconv.IsPrint) is written as a Go
// escape ("\x1b", "\n", "\u202e"), and a byte that is not UTF-8 as
// "\xHH", the way strconv.Quote writes them. A string argument is shown
// quoted (Quote), so that where it ends is plain; a name is shown as it
// is, escapes aside (Text): printable Unicode, quotes and backslashes
// are left alone, so that names as the compilers make them (a C++
// operator"" name, a Unicode identifier) show unchanged. A name that
// holds a backslash followed by "x1b" then reads as one that held an
// escape character: what is printed is safe, not always reversible.
package escape

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text returns s with its characters that are not printable escaped:
// s itself when it has none.
func Text(s string) string {
	if plain(s) {
		return s
	}
	return string(AppendText(make([]byte, 0, len(s)+8), s))
}

// AppendText appends s to b as Text writes it, without allocating when
// s needs no escape.
func AppendText(b []byte, s string) []byte {
	if plain(s) {
		return append(b, s...)
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\x`...)
			b = append(b, hex[c>>4], hex[c&15])
		case strconv.IsPrint(r):
			b = append(b, s[i:i+n]...)
		default:
			// '\x1b' and the like, without the quotes.
			q := strconv.AppendQuoteRune(b, r)
			b = append(q[:len(b)], q[len(b)+1:len(q)-1]...)
		}
		i += n
	}
	return b
}

// Quote returns s in double quotes, its quotes, backslashes and
// characters that are not printable escaped: a string argument as the
// views show it.
func Quote(s string) string { return strconv.Quote(s) }

// Char returns b, a C char, in single quotes: the character of its code
// (Latin-1 above 0x7f), escaped as Quote would when not printable.
func Char(b byte) string { return strconv.QuoteRune(rune(b)) }

// Lines returns s with each line escaped as Text does, the newlines
// between them kept: a message of several lines (a compiler's output
// quoted in an error) to print on a terminal.
func Lines(s string) string {
	var b []byte
	for {
		line, rest, more := strings.Cut(s, "\n")
		b = AppendText(b, line)
		if !more {
			return string(b)
		}
		b = append(b, '\n')
		s = rest
	}
}

const hex = "0123456789abcdef"

// plain says whether s is printable ASCII only: what almost every name
// is, shown as it is without a look at each rune.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
