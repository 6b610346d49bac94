package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/core/media/mediatest"
)

// BenchmarkPhotoToModel: a user sends a 4 MB photo (4000×3000 JPEG) on
// Telegram; measured from the fake taking the update to the model getting
// the request with the scaled image in it: the download (getFile and the
// file), decoding, scaling to media.max_image_px and re-encoding. Reports
// p50 and p99, the bytes allocated per photo (the fakes' included), and
// the most the heap in use grew while one photo went through (the fakes'
// copies of the photo and of the request included).
//
//	go test -run '^$' -bench BenchmarkPhotoToModel -benchtime 20x ./cmd/parley/
func BenchmarkPhotoToModel(b *testing.B) {
	photo := mediatest.Photo(4000, 3000, 95, true)
	fake := telegramtest.NewServer(b)
	model := llmtest.NewServer(b)
	model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("nice") })
	dir := b.TempDir()
	path := filepath.Join(dir, "config.yaml")
	require.NoError(b, os.WriteFile(path, []byte(fmt.Sprintf(`store: {dsn: "%s"}
llm: {base_url: "%s", api_key: k, model: m}
http: {listen: "127.0.0.1:0"}
adapters:
  web: {enabled: false}
  telegram: {token: "%s", api_url: "%s"}
runs: {debounce: 0s}
plugins:
  memory: {fact_every: 1000h, summary_every: 1000h}
`, filepath.Join(dir, "parley.db"), model.URL(), fake.Token(), fake.URL())), 0o600))
	cfg, err := config.Load(path, nil)
	require.NoError(b, err)
	logs := &coretest.Logs{}
	a, err := buildApp(context.Background(), cfg, logs.Logger(), appOptions{
		wantAdapter: func(_ string, enabled bool) bool { return enabled },
	})
	require.NoError(b, err)
	require.NoError(b, a.start(context.Background()))
	b.Cleanup(func() { _ = a.stop() })

	// peak is the highest heap in use the sampler saw since it was last
	// reset; each photo's is measured from the heap left after the one
	// before was collected, so the fakes' growing store of sent files
	// does not count.
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				for {
					p := peak.Load()
					if ms.HeapInuse <= p || peak.CompareAndSwap(p, ms.HeapInuse) {
						break
					}
				}
			}
		}
	}()
	var worst uint64
	var ms runtime.MemStats

	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(len(photo)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// A new user each time: a session's earlier photos stay in its
		// later turns, and are cached.
		user := telegramtest.User{ID: int64(9001 + i), FirstName: "Bench"}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		floor := ms.HeapInuse
		peak.Store(floor)
		b.StartTimer()
		start := time.Now()
		fake.SendPhoto(user, telegramtest.Media{Data: photo})
		reqs := model.WaitRequests(b, i+1, time.Minute)
		lat = append(lat, time.Since(start))
		if n := len(reqs[i].ImageURLs()); n != 1 {
			b.Fatalf("request %d has %d images, want 1", i, n)
		}
		fake.WaitSent(b, user.ID, 1, time.Minute)
		worst = max(worst, peak.Load()-min(peak.Load(), floor))
	}
	b.StopTimer()
	close(stop)
	<-sampled
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Milliseconds()), "p99-ms")
	b.ReportMetric(float64(worst)/(1<<20), "peak-heap-per-photo-MiB")
	b.ReportMetric(float64(vmHWM())/(1<<10), "peak-rss-MiB")
}

// vmHWM is the process's peak resident set in KiB (Linux), 0 if unknown.
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
