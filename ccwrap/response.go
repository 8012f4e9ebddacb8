package ccwrap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"syscall"
)

// Response files (@file) are read as gcc's driver reads them (libiberty's
// expandargv and buildargv), with bounds gcc does not have, and without
// ever blocking:
//
//   - an argument starting with @ names a response file; one that cannot
//     be opened (missing, unreadable, a socket), or whose end cannot be
//     sought (a terminal), is not one and stays an argument, as it is;
//   - a directory is an error ("@-file refers to a directory");
//   - so is a FIFO, which is never opened: gcc's fopen waits for a
//     writer, then its fseek fails, the argument stays and the link fails
//     on it ("cannot find @fifo"). The wrapper fails at once instead;
//   - the file is read up to the end its seek gave when opened: /dev/zero
//     and the files of /proc are empty; up to its first NUL byte, as a C
//     string;
//   - the arguments it holds replace it, and are read again, so a
//     response file may name others (relative to the working directory,
//     as gcc takes them);
//   - the 2000th argument starting with @ (readable or not, nested ones
//     included) is an error, as gcc's "too many @-files encountered": a
//     file that names itself ends there;
//   - beyond gcc: the response files of one command hold at most
//     maxResponseBytes together, and expand to at most maxArgs arguments,
//     so that no command line, however it nests, takes more memory than
//     that.
const (
	maxAtArgs        = 2000     // arguments starting with @, as libiberty's iteration_limit
	maxResponseBytes = 64 << 20 // bytes of all a command's response files together
	maxArgs          = 1 << 20  // arguments, once expanded
)

// ErrResponse: a response file that fails the command, as gcc fails it
// (a directory, too many @ arguments, a FIFO) or past the wrapper's
// bounds.
var ErrResponse = errors.New("bad response file")

// ReadResponse reads the response file name as gcc reads one, at most
// max bytes, without blocking. An error wrapping ErrResponse fails the
// command (a directory, a FIFO, a file larger than max); any other error
// means that name is not a response file, and the argument stays as it
// is.
func ReadResponse(name string, max int64) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("@%s: %w: @-file refers to a directory", name, ErrResponse)
	}
	if fi.Mode()&fs.ModeNamedPipe != 0 {
		return nil, fmt.Errorf("@%s: %w: a FIFO, which gcc cannot read as one (it waits for a writer, then takes @%s for a file name)", name, ErrResponse, name)
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if size > max {
		return nil, fmt.Errorf("@%s: %w: %d bytes, past the bytes left to read of a command's response files (%d in all)", name, ErrResponse, size, int64(maxResponseBytes))
	}
	data := make([]byte, size)
	n, err := io.ReadFull(f, data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return data[:n], nil
}

// bounds are the wrapper's bounds on a command's response files.
type bounds struct {
	bytes int64 // bytes of all the files together
	args  int   // arguments, once expanded
}

// expand replaces each @file argument that names a response file with
// the arguments the file holds, read by read (ReadResponse, given the
// bytes left of the bound), recursively, as the comment above says; it
// returns the arguments and the response files read.
func expand(args []string, read func(string, int64) ([]byte, error)) (out, files []string, err error) {
	return expandWithin(args, read, bounds{maxResponseBytes, maxArgs})
}

// expandWithin is expand within the bounds b.
func expandWithin(args []string, read func(string, int64) ([]byte, error), b bounds) (out, files []string, err error) {
	stack := [][]string{args} // each frame: the arguments of a file (the command line's first) not yet read
	queued := len(args)       // arguments in the frames, not yet read
	at, left := 0, b.bytes
	tooMany := fmt.Errorf("%w: more than %d arguments in response files", ErrResponse, b.args)
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if len(*top) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		a := (*top)[0]
		*top = (*top)[1:]
		queued--
		if !strings.HasPrefix(a, "@") {
			if len(out) == b.args {
				return nil, nil, tooMany
			}
			out = append(out, a)
			continue
		}
		if at++; at == maxAtArgs {
			return nil, nil, fmt.Errorf("%s: %w: too many @-files encountered (%d, as gcc allows; one names itself?)", a, ErrResponse, maxAtArgs)
		}
		data, err := read(a[1:], left)
		if errors.Is(err, ErrResponse) {
			return nil, nil, err
		}
		if err == nil && int64(len(data)) > left {
			return nil, nil, fmt.Errorf("%s: %w: past the %d bytes read of a command's response files", a, ErrResponse, b.bytes)
		}
		if err != nil {
			out = append(out, a) // not a response file: an argument, as gcc takes it
			continue
		}
		left -= int64(len(data))
		files = append(files, a[1:])
		if i := bytes.IndexByte(data, 0); i >= 0 {
			data = data[:i] // gcc reads the text as a C string
		}
		// Split no more arguments than the bound leaves: a file of
		// one-letter arguments would otherwise take many times its size.
		room := b.args - len(out) - queued
		split, ok := splitArgs(data, room)
		if !ok {
			return nil, nil, tooMany
		}
		queued += len(split)
		stack = append(stack, split)
	}
	return out, files, nil
}

// SplitResponse splits a response file's text into arguments as gcc's
// libiberty (buildargv, as in GCC 12) does: whitespace separates them;
// single and double quotes group; a backslash takes the next character
// as it is, in quotes or not, and one at the very end is dropped. Text
// of only whitespace holds no argument.
func SplitResponse(s string) []string {
	out, _ := splitArgs(s, math.MaxInt)
	return out
}

// splitArgs is SplitResponse of at most max arguments: ok is false, and
// the text not split further, when it holds more. It takes the bytes
// read as they are, not a copy.
func splitArgs[T ~string | ~[]byte](s T, max int) (out []string, ok bool) {
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return out, true
		}
		if len(out) >= max {
			return out, false
		}
		var b strings.Builder
		var squote, dquote bool
		for ; i < len(s); i++ {
			ch := s[i]
			switch {
			case ch == '\\':
				if i++; i < len(s) {
					b.WriteByte(s[i])
				}
			case squote:
				if ch == '\'' {
					squote = false
				} else {
					b.WriteByte(ch)
				}
			case dquote:
				if ch == '"' {
					dquote = false
				} else {
					b.WriteByte(ch)
				}
			case isSpace(ch):
				goto done
			case ch == '\'':
				squote = true
			case ch == '"':
				dquote = true
			default:
				b.WriteByte(ch)
			}
		}
	done:
		out = append(out, b.String())
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// QuoteResponse writes args as a response file's text that SplitResponse
// (and the compilers) read back as the same arguments.
func QuoteResponse(args []string) string {
	var b strings.Builder
	for _, a := range args {
		if a == "" {
			b.WriteString(`""`)
		}
		for i := 0; i < len(a); i++ {
			if strings.IndexByte(" \t\n\r\f\v\\'\"", a[i]) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(a[i])
		}
		b.WriteByte('\n')
	}
	return b.String()
}
