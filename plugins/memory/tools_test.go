package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/store"
)

type bundle struct {
	ctx   context.Context
	st    *store.Store
	facts *memory.FactStore
	p     *memory.Plugin
}

func setup(t *testing.T, configure ...func(*memory.Plugin)) *bundle {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "m.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	p := memory.New()
	require.NoError(t, st.Migrate(ctx, p))
	for _, c := range configure {
		c(p)
	}
	require.NoError(t, p.Provision(ctx, core.Env{Store: st, Database: st.Database()}))
	require.NoError(t, p.Validate())
	return &bundle{ctx: ctx, st: st, facts: memory.NewFactStore(st.Database()), p: p}
}

// say stores a user message and the bot's answer in thread at at.
func (b *bundle) say(t *testing.T, thread, user, bot string, at time.Time) core.Conversation {
	t.Helper()
	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: thread,
		DisplayName: thread, Text: user, Now: at, SessionGap: 10 * time.Minute})
	require.NoError(t, err)
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: res.Conversation.ID, Role: core.RoleAssistant,
		Content: bot, Source: core.SourceReply, CreatedAt: at.Add(time.Second)}))
	conv, err := b.st.Conversation(b.ctx, res.Conversation.ID)
	require.NoError(t, err)
	return conv
}

func (b *bundle) turn(t testing.TB, conv core.Conversation, now time.Time) *core.Turn {
	t.Helper()
	rec, err := b.st.SessionRecord(b.ctx, *conv.CurrentRecordID)
	require.NoError(t, err)
	return &core.Turn{Conversation: conv, Record: rec, Now: now, Location: time.UTC}
}

// call runs a memory tool of the turn with args.
func (b *bundle) call(t testing.TB, turn *core.Turn, name, args string) (string, error) {
	t.Helper()
	tools, err := b.p.Tools(b.ctx, turn)
	require.NoError(t, err)
	for _, tool := range tools {
		if tool.Name == name {
			require.True(t, json.Valid(tool.Parameters), name)
			return tool.Call(b.ctx, json.RawMessage(args))
		}
	}
	t.Fatalf("no tool %s", name)
	return "", nil
}

func toolNamed(t *testing.T, tools []llm.Tool, name string) llm.Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %s", name)
	return llm.Tool{}
}

func TestRetrieveRecordAndHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	conv := b.say(t, "ann", "I planted tomatoes 番茄", "Lovely!", t0)
	first := *conv.CurrentRecordID
	conv = b.say(t, "ann", "The tomatoes are red now", "Time for a salad", t0.Add(24*time.Hour))
	turn := b.turn(t, conv, t0.Add(24*time.Hour))

	out, err := b.call(t, turn, "retrieve_record", fmt.Sprintf(`{"record_id":%d}`, first))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("Session Record %d (Mon 23 Nov 2026 09:00–09:00):\nUser: I planted tomatoes 番茄\nYou: Lovely!", first), out)
	tools, err := b.p.Tools(b.ctx, turn)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("[Session Record %d has read]", first),
		toolNamed(t, tools, "retrieve_record").Placeholder(json.RawMessage(fmt.Sprintf(`{"record_id":%d}`, first))))

	for args, want := range map[string]string{
		`{"record_id":999}`:        "there is no session record 999 with this person",
		`{}`:                       "record_id is required",
		`{"record_id":"one"}`:      "bad arguments",
		`{"record_id":1,"x":true}`: "unknown field",
	} {
		_, err := b.call(t, turn, "retrieve_record", args)
		require.ErrorContains(t, err, want, args)
	}

	out, err = b.call(t, turn, "retrieve_history", `{"keyword":"tomato"}`)
	require.NoError(t, err)
	var hist struct {
		Messages []struct {
			RecordID int64  `json:"record_id"`
			From     string `json:"from"`
			Text     string `json:"text"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &hist))
	require.Len(t, hist.Messages, 2)
	require.Equal(t, "The tomatoes are red now", hist.Messages[0].Text, "newest first")
	require.Equal(t, first, hist.Messages[1].RecordID, "with its record id")
	require.Equal(t, "user", hist.Messages[1].From)
	out, err = b.call(t, turn, "retrieve_history", `{"keyword":"番茄"}`)
	require.NoError(t, err)
	require.Contains(t, out, "I planted tomatoes 番茄")
	out, err = b.call(t, turn, "retrieve_history", `{"keyword":"cucumber"}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"messages":[],"note":"nothing found"}`, out)
	_, err = b.call(t, turn, "retrieve_history", `{"keyword":"  "}`)
	require.ErrorContains(t, err, "keyword is empty")
	_, err = b.call(t, turn, "retrieve_history", `{"keyword":"?!"}`)
	require.ErrorContains(t, err, "has no words to look for")
}

func TestFactTools(t *testing.T) {
	t.Parallel()
	b := setup(t, func(p *memory.Plugin) { p.MaxFacts = 3 })
	conv := b.say(t, "ann", "hi", "hello", t0)
	turn := b.turn(t, conv, t0)
	for i, fact := range []string{"likes green tea", "has a cat named Miso", "lives in Lyon"} {
		turn.Now = t0.Add(time.Duration(i) * time.Minute)
		out, err := b.call(t, turn, "remember_fact", fmt.Sprintf(`{"fact":%q}`, fact))
		require.NoError(t, err)
		require.JSONEq(t, fmt.Sprintf(`{"remembered":{"id":"F%02d","fact":%q}}`, i+1, fact), out)
	}
	require.NoError(t, b.facts.Touch(b.ctx, conv.ID, []string{"F01"}, t0.Add(time.Hour)))
	turn.Now = t0.Add(2 * time.Hour)
	out, err := b.call(t, turn, "remember_fact", `{"fact":"plays the cello"}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"remembered":{"id":"F04","fact":"plays the cello"},"forgot_to_make_room":["F02"]}`, out,
		"full: the least recently used goes")

	out, err = b.call(t, turn, "list_facts", `{}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"facts":[{"id":"F01","fact":"likes green tea"},{"id":"F03","fact":"lives in Lyon"},{"id":"F04","fact":"plays the cello"}]}`, out)

	out, err = b.call(t, turn, "forget_fact", `{"fact_id":"f03"}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"forgotten":{"id":"F03","fact":"lives in Lyon"}}`, out)
	_, err = b.call(t, turn, "forget_fact", `{"fact_id":"F03"}`)
	require.ErrorContains(t, err, "there is no fact F03")
	_, err = b.call(t, turn, "forget_fact", `{"fact_id":""}`)
	require.ErrorContains(t, err, "fact_id is empty")

	out, err = b.call(t, turn, "remember_fact", fmt.Sprintf(`{"fact":%q}`, strings.Repeat("very long ", 100)))
	require.NoError(t, err)
	require.Contains(t, out, `"note":"cut to 300 characters"`)
	facts, err := b.facts.Facts(b.ctx, conv.ID)
	require.NoError(t, err)
	require.LessOrEqual(t, len([]rune(facts[len(facts)-1].Content)), 301, "a huge fact is truncated")
	_, err = b.call(t, turn, "remember_fact", `{"fact":"   "}`)
	require.ErrorContains(t, err, "fact is empty")
}

// TestNoMemoryCrossesUsers builds many users, each with a secret in their
// messages, facts and summaries, and checks that nothing one user's turn
// can see (the prompt layers, every tool's answer, searches for every
// other user's secret, every record id) holds another user's secret.
func TestNoMemoryCrossesUsers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (set it here to replay a failure)", seed)
	r := rand.New(rand.NewPCG(seed, 42))
	used := map[string]bool{}
	unique := func() string { // no two users share a secret by chance
		for {
			if s := secret(r); !used[s] {
				used[s] = true
				return s
			}
		}
	}
	const users = 24
	type user struct {
		conv    core.Conversation
		secrets []string
	}
	var all []user
	var recordIDs []int64
	for i := range users {
		thread := fmt.Sprintf("user-%02d", i)
		s1, s2, s3 := unique(), unique(), unique()
		at := t0.Add(-time.Duration(r.IntN(72)) * time.Hour)
		conv := b.say(t, thread, "my code word is "+s1, "I will keep "+s1+" safe", at)
		require.NoError(t, b.st.DB().Exec(`UPDATE session_records SET summary = ? WHERE id = ?`, "They told a secret: "+s2, *conv.CurrentRecordID).Error)
		recordIDs = append(recordIDs, *conv.CurrentRecordID)
		_, _, err := b.facts.Remember(b.ctx, conv.ID, "secret fact "+s3, 30, at)
		require.NoError(t, err)
		conv = b.say(t, thread, "hello again "+unique(), "welcome back", t0.Add(time.Duration(i)*time.Minute))
		all = append(all, user{conv: conv, secrets: []string{s1, s2, s3}})
	}
	for i, u := range all {
		turn := b.turn(t, u.conv, t0.Add(2*time.Hour))
		var seen strings.Builder
		layers, err := b.p.PromptLayers(b.ctx, turn)
		require.NoError(t, err)
		for _, l := range layers {
			seen.WriteString(l.Text + "\n")
		}
		out, err := b.call(t, turn, "list_facts", `{}`)
		require.NoError(t, err)
		seen.WriteString(out)
		for _, id := range recordIDs {
			out, err := b.call(t, turn, "retrieve_record", fmt.Sprintf(`{"record_id":%d}`, id))
			if err == nil {
				seen.WriteString(out)
			} else {
				seen.WriteString(err.Error())
			}
		}
		for _, other := range all {
			for _, s := range other.secrets {
				out, err := b.call(t, turn, "retrieve_history", fmt.Sprintf(`{"keyword":%q}`, s))
				require.NoError(t, err)
				seen.WriteString(out)
			}
		}
		got := seen.String()
		for _, s := range u.secrets {
			require.Contains(t, got, s, "user %d sees their own memory", i)
		}
		for j, other := range all {
			if j == i {
				continue
			}
			for _, s := range other.secrets {
				require.NotContains(t, got, s, "user %d saw user %d's secret", i, j)
			}
		}
	}
}

// secret is a random word of Latin letters or Chinese characters.
func secret(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		const letters = "bcdfghjklmnpqrstvwxz"
		var b strings.Builder
		for range 10 {
			b.WriteByte(letters[r.IntN(len(letters))])
		}
		return b.String()
	}
	hanzi := []rune("龙凤虎豹鹤鹰熊狼狐鹿松竹梅兰菊荷桃李杏梨枫柳雪霜雷电云雨")
	var b strings.Builder
	for range 4 {
		b.WriteRune(hanzi[r.IntN(len(hanzi))])
	}
	return b.String()
}
