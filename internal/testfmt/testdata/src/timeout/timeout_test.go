package timeout

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}

func TestSlow(t *testing.T) {
	t.Run("sleeps", func(t *testing.T) { time.Sleep(time.Minute) })
}
