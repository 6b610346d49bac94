package store_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/store"
)

// searchWords are the vocabularies the benchmark's messages are made of.
var (
	searchEnglish = strings.Fields(`the a and to of in is it you that was for on are with as I his they be at one have
		this from or had by hot word but what some we can out other were all there when up use your how said an each she
		bread garden weather coffee exam movie train rain sunny sleep dinner music walk cat dog friend work holiday
		library kitchen bicycle mountain ocean letter window morning evening tomorrow yesterday birthday sister brother`)
	searchChinese = []string{"今天", "天气", "面包", "朋友", "北京", "上海", "咖啡", "考试", "电影", "火车", "下雨", "晴天",
		"睡觉", "晚饭", "音乐", "散步", "小猫", "工作", "假期", "图书馆", "厨房", "自行车", "山上", "海边", "早上", "晚上",
		"明天", "昨天", "生日", "姐姐", "哥哥", "我们", "他们", "喜欢", "觉得", "因为", "所以", "已经", "还是", "一起"}
)

// sentence is a random message: mostly English, mostly Chinese, or mixed.
func sentence(r *rand.Rand) string {
	var b strings.Builder
	n := 4 + r.IntN(12)
	mode := r.IntN(3)
	for i := range n {
		zh := mode == 1 || (mode == 2 && r.IntN(2) == 0)
		if zh {
			b.WriteString(searchChinese[r.IntN(len(searchChinese))])
			if r.IntN(4) == 0 {
				b.WriteString("，")
			}
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(searchEnglish[r.IntN(len(searchEnglish))])
	}
	return b.String()
}

// BenchmarkSearchHistory is retrieve_history's query over 1,000,000 stored
// messages (1,000 conversations of 1,000), a third English, a third
// Chinese, a third mixed, on a SQLite file: each op searches one random
// conversation for one random word (English or Chinese), newest 10. It
// reports the p50, p95 and p99 latency.
func BenchmarkSearchHistory(b *testing.B) {
	const convs, perConv = 1000, 1000
	ctx := b.Context()
	st, err := store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: filepath.Join(b.TempDir(), "search.db")})
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	require.NoError(b, st.Migrate(ctx))
	r := rand.New(rand.NewPCG(7, 11))
	db := st.DB()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000000Z")
	start := time.Now()
	for c := 1; c <= convs; c++ {
		require.NoError(b, db.Exec(`INSERT INTO conversations (id, platform, channel_thread_id, last_seq, created_at, updated_at)
			VALUES (?, 'web', ?, ?, ?, ?)`, c, fmt.Sprintf("u%d", c), perConv, t0, t0).Error)
	}
	// Messages go in round-robin over conversations, as real traffic does.
	const batch = 500
	for seq := 1; seq <= perConv; seq++ {
		for c := 1; c <= convs; c += batch {
			var q strings.Builder
			q.WriteString(`INSERT INTO messages (conversation_id, seq, role, content, source, created_at) VALUES `)
			var args []any
			for k := c; k < c+batch && k <= convs; k++ {
				if k > c {
					q.WriteByte(',')
				}
				q.WriteString(`(?, ?, 'user', ?, 'user', ?)`)
				args = append(args, k, seq, sentence(r), t0)
			}
			require.NoError(b, db.Exec(q.String(), args...).Error)
		}
	}
	loaded := time.Since(start)
	start = time.Now()
	n, err := st.IndexPending(ctx)
	require.NoError(b, err)
	require.Equal(b, convs*perConv, n)
	b.Logf("1,000,000 messages stored in %v, indexed in %v", loaded.Round(time.Second), time.Since(start).Round(time.Second))

	words := append(append([]string(nil), searchEnglish...), searchChinese...)
	lat := make([]time.Duration, 0, b.N)
	found := 0
	b.ResetTimer()
	for range b.N {
		conv := int64(1 + r.IntN(convs))
		kw := words[r.IntN(len(words))]
		t := time.Now()
		got, err := st.SearchMessages(ctx, conv, kw, 10)
		lat = append(lat, time.Since(t))
		if err != nil {
			b.Fatal(err)
		}
		found += len(got)
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(found)/float64(b.N), "hits/op")
}
