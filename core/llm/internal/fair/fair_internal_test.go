package fair

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Freed slots go round the lanes, each lane's requests in order, and
// none is lost however waiters come and go (run with -race).
func TestFairSlotsGoRoundTheLanes(t *testing.T) {
	s := New(1)
	require.True(t, s.TryAcquire())
	a, b := &Lane{}, &Lane{}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	queue := func(ln *Lane, name string, n int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, s.Acquire(context.Background(), ln))
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			s.Release()
		}()
		require.Eventually(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(ln.waiting) == n
		}, 10*time.Second, time.Millisecond)
	}
	queue(a, "a1", 1)
	queue(a, "a2", 2)
	queue(a, "a3", 3)
	queue(b, "b1", 1)
	s.Release()
	wg.Wait()
	require.Equal(t, []string{"a1", "b1", "a2", "a3"}, order)
	require.Equal(t, 1, s.free)
	require.Empty(t, s.ring)
}

func TestFairSlotsUnderContention(t *testing.T) {
	s := New(3)
	lanes := []*Lane{{}, {}, {}, {}}
	var inFlight, most int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			if i%7 == 0 {
				cancel() // some give up at once
			}
			defer cancel()
			if err := s.Acquire(ctx, lanes[i%len(lanes)]); err != nil {
				return
			}
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			mu.Lock()
			inFlight--
			mu.Unlock()
			s.Release()
		})
	}
	wg.Wait()
	require.LessOrEqual(t, most, 3)
	require.Equal(t, 3, s.free, "every slot came back")
}
