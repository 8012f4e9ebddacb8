package fail

import (
	"fmt"
	"testing"
)

func TestGood(t *testing.T) { t.Log("fine") }

func TestBad(t *testing.T) {
	fmt.Println("printed by the test")
	t.Errorf("want %d, got %d", 1, 2)
}

func TestParent(t *testing.T) {
	t.Run("ok", func(t *testing.T) { t.Log("this one passes") })
	t.Run("broken", func(t *testing.T) {
		t.Log("about to fail")
		t.Fatal("broken\nover two lines")
	})
}
