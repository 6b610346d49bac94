package memory_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/store/storetest"
)

// paraphrase is one labelled case: a message the user wrote, and a
// question meaning it in other words.
type paraphrase struct{ stored, query string }

// paraphrases reads testdata/paraphrases.txt: the concepts that make the
// fake's vectors of each pair near, and the pairs.
func paraphrases(t testing.TB) (map[string][]string, []paraphrase) {
	t.Helper()
	raw, err := os.ReadFile("testdata/paraphrases.txt")
	require.NoError(t, err)
	concepts := map[string][]string{}
	var cases []paraphrase
	for line := range strings.Lines(string(raw)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, " | ")
		require.Len(t, f, 3, "line %q", line)
		words := strings.Fields(f[0])
		concepts[words[0]] = words
		cases = append(cases, paraphrase{stored: f[1], query: f[2]})
	}
	return concepts, cases
}

// fillerWords make the history the labelled messages hide in: everyday
// talk, some of it on the same subjects (weather, work, friends).
var fillerWords = strings.Fields(`the a and to of in is it was for on with as at this from we can out all there when up
	bread weather coffee train rain sunny dinner walk friend work today tomorrow yesterday morning evening kitchen
	window letter ocean mountain library shop bus late early busy quiet lunch tea park city street`)

// recallAtFive seeds a conversation with the labelled messages among
// filler ones, then asks each question: the share of questions whose
// message retrieve_history returns among its first five, with embeddings,
// and the share the words alone find (the same search without them).
func recallAtFive(t *testing.T, fillers int) (hybrid, words float64) {
	concepts, cases := paraphrases(t)
	st := storetest.OpenSQLite(t)
	require.NoError(t, st.Migrate(t.Context(), memory.New()))
	b := startMeaning(t, storeCase{st: st}, llmtest.NewServer(t, llmtest.WithEmbedding(llmtest.Embedding{Concepts: concepts})), "embed-test")
	r := rand.New(rand.NewPCG(3, 5))
	at := t0.Add(-time.Duration(fillers+len(cases)) * time.Minute)
	next := 0
	for i := range fillers + len(cases) {
		text := ""
		if i%(fillers/len(cases)+1) == 0 && next < len(cases) {
			text = cases[next].stored
			next++
		} else {
			var w []string
			for range 5 + r.IntN(8) {
				w = append(w, fillerWords[r.IntN(len(fillerWords))])
			}
			text = strings.Join(w, " ")
		}
		b.say(t, "ana", text, "I see.", at.Add(time.Duration(i)*time.Minute))
	}
	require.Equal(t, len(cases), next)
	b.embedAll(t)
	conv := b.say(t, "ana", "hello again", "Hi!", t0)
	turn := b.turn(t, conv, t0)
	found, byWords := 0, 0
	for _, c := range cases {
		out := history(t, b.bundle, turn, c.query)
		var res struct {
			Messages []struct{ Text string } `json:"messages"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		for i, m := range res.Messages {
			if i < 5 && m.Text == c.stored {
				found++
			}
		}
		ws, err := st.SearchMessages(t.Context(), conv.ID, c.query, 5)
		require.NoError(t, err)
		for _, m := range ws {
			if m.Content == c.stored {
				byWords++
			}
		}
	}
	n := float64(len(cases))
	return float64(found) / n, float64(byWords) / n
}

// Recall@5 on the labelled set: retrieve_history with embeddings finds
// at least 9 in 10 of the messages a question means in other words,
// where the words alone find (nearly) none.
func TestRecallAtFiveByMeaning(t *testing.T) {
	t.Parallel()
	hybrid, words := recallAtFive(t, 2000)
	t.Logf("recall@5 over 50 paraphrases in 2,050 messages: %.2f with embeddings, %.2f by words alone", hybrid, words)
	require.GreaterOrEqual(t, hybrid, 0.9, "recall@5 with embeddings")
	require.Greater(t, hybrid, words)
}
