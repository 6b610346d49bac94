package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Clock without AfterFunc still runs the function, through a goroutine
// that waits on its timer, and stopping it before then keeps it from
// running.
func TestAfterFuncOnAClockWithoutIt(t *testing.T) {
	t.Parallel()
	clock := struct{ Clock }{SystemClock{}} // Now and NewTimer only
	_, has := Clock(clock).(afterFuncClock)
	require.False(t, has)

	ran := make(chan struct{})
	AfterFunc(clock, time.Millisecond, func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the function did not run")
	}

	stopped := AfterFunc(clock, time.Hour, func() { t.Error("a stopped function ran") })
	require.True(t, stopped.Stop())
	require.False(t, stopped.Stop(), "stopped once")
}
