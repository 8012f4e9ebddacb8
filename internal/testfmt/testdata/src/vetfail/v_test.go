package vetfail

import (
	"fmt"
	"testing"
)

func TestVet(t *testing.T) { fmt.Printf("%d\n", "string") }
