package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errZeroWord: a stream's next word is 0, which starts no record: a
// hole, or zeros a system that stopped left where records were to go.
// The stream ends there.
var errZeroWord = errors.New("a zero word where a record starts")

// A decoder turns one stream's bytes into records.
type decoder struct{}

// newDecoder returns the decoder for a stream whose header starts with
// magic.
func newDecoder(magic []byte) (*decoder, error) {
	if string(magic) != "ftrtrec2" {
		return nil, fmt.Errorf("%w: no stream header", ErrFormat)
	}
	return &decoder{}, nil
}

// decode decodes the whole records of b into out, stopping when out is
// full or b holds no whole record more: n records written, used bytes
// of b consumed.
func (d *decoder) decode(b []byte, out []Record) (n, used int, err error) {
	le := binary.LittleEndian
	for n < len(out) && len(b)-used >= 8 {
		w0 := le.Uint64(b[used:])
		if w0 == 0 {
			return n, used, errZeroWord
		}
		rec := Record{TS: w0 & tsMask, Info: w0 &^ tsMask}
		size := 8
		switch rec.Kind() {
		case Call:
			size = 24
		case Entry:
			size = 16
		}
		if len(b)-used < size {
			break
		}
		switch rec.Kind() {
		case Call:
			rec.IP = le.Uint64(b[used+8:])
			rec.Info |= le.Uint64(b[used+16:]) & tsMask
		case Entry:
			rec.IP = le.Uint64(b[used+8:])
		}
		out[n] = rec
		n++
		used += size
	}
	return n, used, nil
}
