package uses1

import (
	"testing"

	"example.com/rec/lib"
)

func TestUses(t *testing.T) { _ = lib.F() }
