package buildfail

import "testing"

func TestNever(t *testing.T) { undefined() }
