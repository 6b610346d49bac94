package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// concepts make the fake's vectors of paraphrases near each other.
var concepts = map[string][]string{
	"wedding": {"wedding", "married", "marry", "marrying", "bride", "groom"},
	"job":     {"job", "notice", "resign", "resigned", "quit", "career", "work"},
	"live":    {"lives", "live", "living", "moved", "move", "moving"},
}

// meaningBundle is the memory plugin with embeddings on, its engines on a
// clock the test moves, against the fake model's /embeddings.
type meaningBundle struct {
	*bundle
	model *llmtest.Server
	clock *coretest.Clock
	logs  *coretest.Logs
}

// storeCase is a store the memory-by-meaning tests run on, and how its
// vectors are searched: by the plugin, or by PostgreSQL's pgvector.
type storeCase struct {
	st       *store.Store
	pgvector bool
	// byIndex makes pgvector walk its HNSW index even for the tests'
	// small conversations.
	byIndex bool
}

// onBothStores runs f on SQLite, on PostgreSQL with pgvector (comparing
// each vector, and by its index) and on PostgreSQL with the plugin's own
// search.
func onBothStores(t *testing.T, f func(t *testing.T, c storeCase)) {
	t.Helper()
	for _, c := range []struct {
		name              string
		open              func(testing.TB) *store.Store
		pgvector, byIndex bool
	}{
		{"SQLite", storetest.OpenSQLite, false, false},
		{"Postgres", storetest.OpenPostgres, false, false},
		{"Postgres-pgvector", storetest.OpenPostgres, true, false},
		{"Postgres-pgvector-index", storetest.OpenPostgres, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := c.open(t)
			require.NoError(t, st.Migrate(t.Context(), memory.New()))
			f(t, storeCase{st: st, pgvector: c.pgvector, byIndex: c.byIndex})
		})
	}
}

func newModel(t *testing.T) *llmtest.Server {
	return llmtest.NewServer(t, llmtest.WithEmbedding(llmtest.Embedding{Concepts: concepts}))
}

// startMeaning starts the plugin of bot on st with embedding model
// embedModel on fake.
func startMeaning(t testing.TB, c storeCase, fake *llmtest.Server, embedModel string, configure ...func(*memory.Plugin)) *meaningBundle {
	t.Helper()
	st := c.st
	ctx := context.Background()
	client, err := llm.New(llm.Config{BaseURL: fake.URL(), APIKey: "sk-test", Model: "main-model", Timeout: 5 * time.Second, MaxRetries: llm.NoRetries})
	require.NoError(t, err)
	clock := coretest.NewClock(t0)
	logs := &coretest.Logs{}
	p := memory.New()
	p.Embeddings.Model = embedModel
	if !c.pgvector {
		memory.WithoutPgvector(p)
	}
	for _, c := range configure {
		c(p)
	}
	env := core.Env{Store: st, Database: st.Database(), LLM: client, LightModel: "light-model", Clock: clock,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		NewEmbedder: func(model string, dims int, base, key string) (*llm.Embedder, error) {
			return llm.NewEmbedder(llm.EmbedderConfig{Dimensions: dims, ServiceConfig: llm.ServiceConfig{
				BaseURL: fake.URL(), APIKey: "sk-test", Model: model, Timeout: 5 * time.Second, MaxRetries: llm.NoRetries}})
		}}
	require.NoError(t, p.Provision(ctx, env))
	require.NoError(t, p.Validate())
	require.NoError(t, p.Start(ctx))
	t.Cleanup(func() { require.NoError(t, p.Stop(context.Background())) })
	require.Equal(t, c.pgvector, memory.SearchesWithPgvector(p),
		"pgvector searches exactly on the PostgreSQL case that wants it (bash .ci/pgvector installs it)")
	if c.byIndex {
		memory.SearchByIndex(p)
	}
	clock.WaitForTimers(t, 1, time.Minute)
	b := &meaningBundle{bundle: &bundle{ctx: ctx, st: st, facts: memory.NewFactStore(st.Database()), p: p}, model: fake, clock: clock, logs: logs}
	return b
}

// embedAll runs the background pass until it sleeps again.
func (b *meaningBundle) embedAll(t testing.TB) {
	t.Helper()
	b.clock.Advance(time.Minute)
	b.clock.WaitForTimers(t, 1, 10*time.Second)
}

// vectorsOf counts the vectors kept of conversation conv by model.
func vectorsOf(t *testing.T, st *store.Store, conv int64, model string) int {
	t.Helper()
	var n int
	require.NoError(t, st.DB().Raw(`SELECT count(*) FROM embeddings WHERE conversation_id = ? AND model = ?`, conv, model).Scan(&n).Error)
	return n
}

func history(t *testing.T, b *bundle, turn *core.Turn, keyword string) string {
	t.Helper()
	args, err := json.Marshal(map[string]string{"keyword": keyword})
	require.NoError(t, err)
	out, err := b.call(t, turn, "retrieve_history", string(args))
	require.NoError(t, err)
	return out
}

// A user's paraphrase finds what they said in other words, which the
// words alone miss; only that user's messages are searched.
func TestRetrieveHistoryFindsWhatWasMeant(t *testing.T) {
	onBothStores(t, func(t *testing.T, c storeCase) {
		st := c.st
		b := startMeaning(t, c, newModel(t), "embed-test")
		at := t0.Add(-48 * time.Hour)
		conv := b.say(t, "ana", "Ana is getting married in June", "How lovely, congratulations to her!", at)
		b.say(t, "ana", "I handed in my notice at the bank today", "That's a big step.", at.Add(time.Minute))
		for i := range 20 {
			b.say(t, "ana", fmt.Sprintf("the weather is grey again, day %d", i), "Stay warm.", at.Add(time.Duration(2+i)*time.Minute))
		}
		other := b.say(t, "bo", "My brother is getting married next week", "Wonderful news!", at)
		b.embedAll(t)
		require.Equal(t, 44, vectorsOf(t, st, conv.ID, "embed-test"), "each message of the user and each reply embedded once")
		require.Equal(t, 2, vectorsOf(t, st, other.ID, "embed-test"))

		words, err := st.SearchMessages(b.ctx, conv.ID, "my sister's wedding", 10)
		require.NoError(t, err)
		require.Empty(t, words, "the words alone find nothing")

		turn := b.turn(t, conv, t0)
		out := history(t, b.bundle, turn, "my sister's wedding")
		require.Contains(t, out, "Ana is getting married in June")
		require.NotContains(t, out, "brother", "another user's message is never found")
		require.Contains(t, out, at.Format("2006-01-02"), "with its date")
		first := strings.Index(out, "Ana is getting married")
		require.Less(t, first, strings.Index(out+"weather", "weather"), "the related message comes first: %s", out)

		out = history(t, b.bundle, turn, "what did I say about my job?")
		require.Contains(t, out, "handed in my notice at the bank")

		// Words still find what they find, first.
		out = history(t, b.bundle, turn, "weather")
		require.Contains(t, out, "the weather is grey again")
	})
}

// The pass embeds only its own bot's conversations, with its own model.
func TestEmbeddingsKeepToTheirBot(t *testing.T) {
	onBothStores(t, func(t *testing.T, c storeCase) {
		st := c.st
		ada := st.ForBot("ada")
		res, err := ada.RecordInbound(t.Context(), core.InboundRecord{Platform: telegram, ChannelThreadID: "ana", Text: "Ana is getting married", Now: t0})
		require.NoError(t, err)
		b := startMeaning(t, c, newModel(t), "embed-test")
		mine := b.say(t, "ana", "my sister is getting married", "Lovely!", t0)
		b.embedAll(t)
		require.Equal(t, 2, vectorsOf(t, st, mine.ID, "embed-test"))
		require.Zero(t, vectorsOf(t, st, res.Conversation.ID, "embed-test"), "ada's user's words never reach the default bot's embeddings")
		for _, r := range b.model.EmbeddingRequests() {
			require.NotContains(t, r.Inputs, "Ana is getting married")
		}
	})
}

// Another embedding model embeds everything again; the first model's
// vectors go, so that no search compares vectors of two models.
func TestEmbeddingModelChange(t *testing.T) {
	onBothStores(t, func(t *testing.T, c storeCase) {
		st := c.st
		fake := newModel(t)
		b := startMeaning(t, c, fake, "embed-a")
		conv := b.say(t, "ana", "Ana is getting married in June", "How lovely!", t0)
		b.embedAll(t)
		require.Equal(t, 2, vectorsOf(t, st, conv.ID, "embed-a"))
		require.NoError(t, b.p.Stop(context.Background()))

		b2 := startMeaning(t, c, fake, "embed-b", func(p *memory.Plugin) { p.Embeddings.Dimensions = 32 })
		b2.embedAll(t)
		require.Zero(t, vectorsOf(t, st, conv.ID, "embed-a"))
		require.Equal(t, 2, vectorsOf(t, st, conv.ID, "embed-b@32"))
		var inputs []string
		for _, r := range fake.EmbeddingRequests() {
			if r.Model == "embed-b" {
				require.Equal(t, 32, r.Dimensions)
				inputs = append(inputs, r.Inputs...)
			}
		}
		require.ElementsMatch(t, []string{"Ana is getting married in June", "How lovely!"}, inputs)
		out := history(t, b2.bundle, b2.turn(t, conv, t0.Add(time.Hour)), "a wedding")
		require.Contains(t, out, "Ana is getting married in June")
	})
}

// The pass goes on where it stopped after a restart, and after a failed
// request: every message embedded, none twice.
func TestEmbeddingPassResumesAfterARestart(t *testing.T) {
	onBothStores(t, func(t *testing.T, c storeCase) {
		st := c.st
		fake := newModel(t)
		seed := func(from, to int) {
			for u := range 3 {
				for i := from; i < to; i++ {
					seedPair(t, st, fmt.Sprintf("user%d", u), i)
				}
			}
		}
		seed(0, 50) // 300 messages: more than one request's 256
		b := startMeaning(t, c, fake, "embed-test")
		b.embedAll(t)
		require.Equal(t, 300, countVectors(t, st))
		require.NoError(t, b.p.Stop(context.Background()))
		before := len(fake.EmbeddingRequests())

		seed(50, 60)
		fake.FailEmbeddings(1, 500)
		b2 := startMeaning(t, c, fake, "embed-test")
		b2.embedAll(t)
		var rows, distinct int
		require.NoError(t, st.DB().Raw(`SELECT count(*), count(DISTINCT message_id) FROM embeddings`).Row().Scan(&rows, &distinct))
		require.Equal(t, 360, rows, "3 users x 60 exchanges")
		require.Equal(t, 360, distinct)
		reqs := fake.EmbeddingRequests()[before:]
		require.GreaterOrEqual(t, len(reqs), 2, "the failed request, then the one that embedded")
		embedded := 0
		for _, r := range reqs[1:] {
			embedded += len(r.Inputs)
		}
		require.Equal(t, 60, embedded, "only the new messages, once: the restart read none of the first 300 again")
		require.Contains(t, b2.logs.String(), "embedding messages failed")
	})
}

func countVectors(t testing.TB, st *store.Store) int {
	t.Helper()
	var n int
	require.NoError(t, st.DB().Raw(`SELECT count(*) FROM embeddings`).Scan(&n).Error)
	return n
}

// seedPair stores the i-th exchange of user's conversation.
func seedPair(t *testing.T, st *store.Store, user string, i int) core.Conversation {
	t.Helper()
	at := t0.Add(-time.Duration(200-i) * time.Minute)
	res, err := st.RecordInbound(t.Context(), core.InboundRecord{Platform: telegram, ChannelThreadID: user, DisplayName: user,
		Text: fmt.Sprintf("message %d of %s", i, user), Now: at, SessionGap: 10 * time.Minute})
	require.NoError(t, err)
	require.NoError(t, st.AppendMessage(t.Context(), &core.Message{ConversationID: res.Conversation.ID, Role: core.RoleAssistant,
		Content: fmt.Sprintf("answer %d to %s", i, user), Source: core.SourceReply, CreatedAt: at.Add(time.Second)}))
	return res.Conversation
}

// Recall puts what relates to the user's new message, from an earlier
// session, in the prompt with its date; what is unrelated, and the
// session's own messages, stay out.
func TestRecallBeforeTheTurn(t *testing.T) {
	onBothStores(t, func(t *testing.T, c storeCase) {
		st := c.st
		b := startMeaning(t, c, newModel(t), "embed-test")
		old := t0.Add(-72 * time.Hour)
		b.say(t, "ana", "Ana is getting married in June", "How lovely!", old)
		b.say(t, "ana", "the weather is grey again", "Stay warm.", old.Add(time.Minute))
		res, err := st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "ana", DisplayName: "ana",
			Text: "remember my sister's wedding? what should I wear", Now: t0, SessionGap: 10 * time.Minute})
		require.NoError(t, err)
		b.embedAll(t)
		conv, err := st.Conversation(b.ctx, res.Conversation.ID)
		require.NoError(t, err)
		turn := b.turn(t, conv, t0)
		turn.History = []core.Message{res.Message}

		note := b.p.TurnNote(b.ctx, turn)
		require.Contains(t, note, "## Related from before", "a related message is recalled")
		require.Contains(t, note, "Ana is getting married in June")
		require.Contains(t, note, old.Format("Mon 2 Jan 2006"))
		require.NotContains(t, note, "weather")
		require.NotContains(t, note, "what should I wear", "the new message itself is not recalled")
		layers, err := b.p.PromptLayers(b.ctx, turn)
		require.NoError(t, err)
		require.NotContains(t, core.SystemPromptWith(layers, nil), "Ana is getting married",
			"recall is the turn's, never frozen with the session's stack")

		off := false
		b.p.AutoRecall = &off
		require.Empty(t, b.p.TurnNote(b.ctx, turn), "auto_recall: false recalls nothing")
	})
}

// A new fact that says a known one otherwise replaces it (the newer
// wording wins) instead of standing beside it; a new fact about
// something else is added.
func TestNewFactSaidOtherwiseReplacesTheKnownOne(t *testing.T) {
	onBothStores(t, func(t *testing.T, c storeCase) {
		fake := newModel(t)
		fake.Respond(func(llmtest.Request) llmtest.Response {
			return llmtest.Text(`{"new_facts": ["Moved to Lyon", "Has a cat called Miso"], "updates": [], "used_fact_ids": []}`)
		})
		b := startMeaning(t, c, fake, "embed-test")
		conv := b.say(t, "ana", "I moved to Lyon, with my cat Miso", "Lyon is lovely.", t0)
		require.NoError(t, b.facts.Add(b.ctx, &core.Fact{ConversationID: conv.ID, Key: "F01", Content: "Lives in Lyon"}))
		b.clock.Advance(6 * time.Minute)
		b.clock.WaitForTimers(t, 1, 10*time.Second)
		facts, err := b.facts.Facts(b.ctx, conv.ID)
		require.NoError(t, err)
		var got []string
		for _, f := range facts {
			got = append(got, f.Key+" "+f.Content)
		}
		require.Equal(t, []string{"F01 Moved to Lyon", "F02 Has a cat called Miso"}, got)
	})
}

// An edited message is found by what it says now: its old vector goes at
// the edit, and the pass embeds the new text; a deleted message's vector
// goes and nothing takes its place.
func TestEditedMessageIsEmbeddedAgain(t *testing.T) {
	onBothStores(t, func(t *testing.T, c storeCase) {
		st := c.st
		fake := newModel(t)
		b := startMeaning(t, c, fake, "embed-test")
		at := t0.Add(-48 * time.Hour)
		conv := b.say(t, "ana", "the weather is grey again", "Stay warm.", at)
		b.say(t, "ana", "I handed in my notice at the bank today", "That's a big step.", at.Add(time.Minute))
		b.embedAll(t)
		require.Equal(t, 4, vectorsOf(t, st, conv.ID, "embed-test"))
		turn := b.turn(t, conv, t0)
		require.NotContains(t, history(t, b.bundle, turn, "my sister's wedding"), "weather", "loads the index before the edit")

		msgs, err := st.MessagesBetween(b.ctx, conv.ID, 0, 4, 10)
		require.NoError(t, err)
		edited, deleted := msgs[0], msgs[2]
		require.Equal(t, "the weather is grey again", edited.Content)
		edited.Content = "Ana is getting married in June"
		require.NoError(t, st.SetMessageText(b.ctx, edited))
		deleted.Content, deleted.Metadata = "", map[string]any{core.DeletedKey: true}
		require.NoError(t, st.SetMessageText(b.ctx, deleted))
		require.Equal(t, 2, vectorsOf(t, st, conv.ID, "embed-test"), "the old vectors go with the edit")

		b.embedAll(t)
		require.Equal(t, 3, vectorsOf(t, st, conv.ID, "embed-test"), "the edited text embedded; the deleted message not")
		last := fake.EmbeddingRequests()[len(fake.EmbeddingRequests())-1]
		require.Equal(t, []string{"Ana is getting married in June"}, last.Inputs)
		out := history(t, b.bundle, turn, "my sister's wedding")
		require.Contains(t, out, "Ana is getting married in June", "found by what it says now")
		require.NotContains(t, out, "weather")
		require.NotContains(t, history(t, b.bundle, turn, "what did I say about my job?"), "notice at the bank")
		var queued int
		require.NoError(t, st.DB().Raw(`SELECT count(*) FROM embed_again`).Scan(&queued).Error)
		require.Zero(t, queued)

		asked := len(fake.EmbeddingRequests())
		b.embedAll(t)
		require.Len(t, fake.EmbeddingRequests(), asked, "an edit is embedded again once")
	})
}

// Vectors kept before pgvector was installed are given to it in the
// background: once the pass has run, pgvector finds them.
func TestVectorsKeptBeforePgvectorAreSearchedWithIt(t *testing.T) {
	st := storetest.OpenPostgres(t)
	require.NoError(t, st.Migrate(t.Context(), memory.New()))
	fake := newModel(t)
	before := startMeaning(t, storeCase{st: st}, fake, "embed-test")
	conv := before.say(t, "ana", "Ana is getting married in June", "How lovely!", t0.Add(-time.Hour))
	before.embedAll(t)
	require.NoError(t, before.p.Stop(context.Background()))
	// As a store whose pgvector came later has them: the column empty.
	require.NoError(t, st.DB().Exec(`ALTER TABLE embeddings DROP COLUMN IF EXISTS embedding`).Error)

	b := startMeaning(t, storeCase{st: st, pgvector: true}, fake, "embed-test")
	b.embedAll(t)
	var empty int
	require.NoError(t, st.DB().Raw(`SELECT count(*) FROM embeddings WHERE embedding IS NULL`).Scan(&empty).Error)
	require.Zero(t, empty)
	require.Contains(t, history(t, b.bundle, b.turn(t, conv, t0), "my sister's wedding"), "Ana is getting married in June")
}

// The embeddings' settings: the key is never shown, and settings that do
// nothing are an error that says what to do.
func TestEmbeddingsSettings(t *testing.T) {
	p := memory.New()
	require.NoError(t, yaml.Unmarshal([]byte("embeddings: {model: text-embedding-3-small, api_key: sk-very-secret, dimensions: 256}"), p))
	require.NoError(t, p.Validate())
	require.Equal(t, "sk-very-secret", p.Embeddings.APIKey.Reveal())
	js, err := json.Marshal(p.Embeddings)
	require.NoError(t, err)
	for _, shown := range []string{fmt.Sprintf("%v", p.Embeddings), fmt.Sprintf("%+v", p.Embeddings), fmt.Sprintf("%#v", p.Embeddings), string(js)} {
		require.NotContains(t, shown, "sk-very-secret")
	}

	for text, want := range map[string]string{
		"embeddings: {api_key: sk-x}":                     "embeddings.model is empty, so its base_url, api_key and dimensions do nothing",
		"embeddings: {model: m, dimensions: -1}":          "embeddings.dimensions must be 0 (the model's own) to 8192, got -1",
		"embeddings: {base_url: 'http://127.0.0.1:9/v1'}": "set a model (e.g. text-embedding-3-small) or remove them",
	} {
		p := memory.New()
		require.NoError(t, yaml.Unmarshal([]byte(text), p))
		require.ErrorContains(t, p.Validate(), want, text)
	}
}
