package discord

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// fuzzBotID is the bot's own user id in FuzzMessageCreate.
const fuzzBotID = "100000000000000999"

// snowflakeRE is what Discord ids look like.
var snowflakeRE = regexp.MustCompile(`^[0-9]{1,20}$`)

// wireMessage is the part of a MESSAGE_CREATE payload the oracle reads.
type wireMessage struct {
	ID        string `json:"id"`
	ChannelID string `json:"channel_id"`
	GuildID   string `json:"guild_id"`
	Content   string `json:"content"`
	Type      int    `json:"type"`
	Author    *struct {
		ID  string `json:"id"`
		Bot bool   `json:"bot"`
	} `json:"author"`
	Attachments  []json.RawMessage `json:"attachments"`
	StickerItems []json.RawMessage `json:"sticker_items"`
}

// FuzzMessageCreate checks the Discord adapter's inbound decoding: a
// gateway MESSAGE_CREATE payload decoded the way discordgo decodes it,
// then normalised, on payload as it comes and on a message made of the
// other arguments. It never panics; a message in a server (with a
// guild_id) never reaches the core; one that does is a DM from a user who
// is neither a bot nor the bot itself, of the default or reply type, whose
// channel, author and message ids are snowflakes and whose text is the
// payload's content, and which has text or files (no more of them than
// the payload's attachments and stickers). The made message is taken
// exactly when all of that holds and its content is not blank.
func FuzzMessageCreate(f *testing.F) {
	for _, s := range []struct {
		payload                      string
		guildID, channelID, authorID string
		bot                          bool
		typ                          uint8
		content                      string
	}{
		{`{"id":"300000000000000001","channel_id":"200000000000000001","author":{"id":"100000000000000001","username":"ada"},"content":"hi","type":0,"timestamp":"2026-01-02T03:04:05.000000+00:00"}`,
			"", "200000000000000001", "100000000000000001", false, 0, "hi"},
		{`{"id":"300000000000000002","channel_id":"200000000000000001","guild_id":"400000000000000001","author":{"id":"100000000000000001"},"content":"in a server"}`,
			"400000000000000001", "200000000000000001", "100000000000000001", false, 0, "in a server"},
		{`{"id":"3","channel_id":"2","author":{"id":"1","bot":true},"content":"bot"}`, "", "2", "1", true, 0, "bot"},
		{`{"id":"3","channel_id":"2","author":{"id":"` + fuzzBotID + `"},"content":"me"}`, "", "2", fuzzBotID, false, 0, "me"},
		{`{"id":"3","channel_id":"2","author":{"id":"1"},"content":"joined","type":7}`, "", "2", "1", false, 7, "joined"},
		{`{"id":"3","channel_id":"2","author":{"id":"1"},"content":"a reply","type":19,"message_reference":{"message_id":"2"}}`, "", "2", "1", false, 19, "a reply"},
		{`{"id":"3","channel_id":"../2","author":{"id":"1"},"content":"path"}`, "", "../2", "1", false, 0, "path"},
		{`{"id":"3","channel_id":"2","author":null,"content":"no author"}`, "", "2", "", false, 0, "x"},
		{`{"id":"3","channel_id":"2","guild_id":null,"author":{"id":"1"},"content":"null guild"}`, "", "123456789012345678901", "1", false, 0, "long id"},
		{`{"id":"3","channel_id":"2","author":{"id":"1"},"content":"  ","embeds":[{"title":"x"}]}`, "", "2", "1", false, 0, " \n\t"},
		{`{"id":"3","channel_id":"2","author":{"id":"1"},"content":"c","components":[{"type":1,"components":[{"type":2}]}]}`, "", "٣", "1", false, 0, "\xff"},
		{`{"id":3,"channel_id":"2","author":{"id":"1"},"content":"numeric id"}`, "", "2", "1", false, 0, "\u0000"},
		{`{"id":"3","channel_id":"2","author":{"id":"1"},"content":"bad time","timestamp":"yesterday"}`, "", "2", "1", false, 0, "🙂"},
		{`{"id":"3","channel_id":"2","author":{"id":"1"},"content":"","attachments":[{"id":"4","filename":"a.png","content_type":"image/png","size":3,"url":"https://cdn.discordapp.com/attachments/2/4/a.png"}]}`, "", "2", "1", false, 0, ""},
		{`{"id":"3","channel_id":"2","author":{"id":"1"},"content":"","flags":8192,"attachments":[null,{"id":"4","content_type":"audio/ogg","duration_secs":1e308}]}`, "", "2", "1", false, 0, ""},
		{`{"id":"3","channel_id":"2","author":{"id":"1"},"content":"","sticker_items":[{"id":"5","name":"Wave","format_type":3},{"id":"../x"}]}`, "", "2", "1", false, 0, ""},
		{`null`, "", "", "", false, 0, ""},
		{`[]`, "x", "2", "1", false, 0, "x"},
	} {
		f.Add([]byte(s.payload), s.guildID, s.channelID, s.authorID, s.bot, s.typ, s.content)
	}
	a := New()
	if err := a.Provision(context.Background(), core.Env{Logger: (&coretest.Logs{}).Logger()}); err != nil {
		f.Fatal(err)
	}
	a.botID = fuzzBotID

	f.Fuzz(func(t *testing.T, payload []byte, guildID, channelID, authorID string, bot bool, typ uint8, content string) {
		var ev discordgo.MessageCreate
		if err := json.Unmarshal(payload, &ev); err == nil {
			if msg, ok := a.normalise(&ev); ok {
				var m wireMessage
				if err := json.Unmarshal(payload, &m); err != nil {
					t.Fatalf("%q was taken as %+v, but does not decode: %v", payload, msg, err)
				}
				checkTaken(t, msg, m)
			}
		}

		author := map[string]any{"id": authorID, "username": "u", "bot": bot}
		made, err := json.Marshal(map[string]any{
			"id": "300000000000000001", "channel_id": channelID, "guild_id": guildID, "author": author,
			"content": content, "type": typ, "timestamp": "2026-01-02T03:04:05.000000+00:00",
		})
		if err != nil {
			t.Fatal(err)
		}
		var m wireMessage
		ev = discordgo.MessageCreate{}
		if err := json.Unmarshal(made, &ev); err != nil || json.Unmarshal(made, &m) != nil {
			t.Fatalf("%s does not decode: %v", made, err)
		}
		msg, ok := a.normalise(&ev)
		// The fields as JSON carries them (valid UTF-8).
		want := m.GuildID == "" && snowflakeRE.MatchString(m.ChannelID) && snowflakeRE.MatchString(m.Author.ID) &&
			m.Author.ID != fuzzBotID && !bot && (typ == 0 || typ == 19) && strings.TrimSpace(m.Content) != ""
		if ok != want {
			t.Fatalf("%s: want taken %t, got %t (%+v)", made, want, ok, msg)
		}
		if ok {
			checkTaken(t, msg, m)
		}
	})
}

// checkTaken checks a message normalise took against its payload.
func checkTaken(t *testing.T, msg core.InboundMessage, m wireMessage) {
	t.Helper()
	switch {
	case m.GuildID != "":
		t.Fatalf("a message in server %q was taken: %+v", m.GuildID, msg)
	case m.Author == nil || m.Author.Bot || m.Author.ID == fuzzBotID || (m.Type != 0 && m.Type != 19):
		t.Fatalf("a message from %+v of type %d was taken", m.Author, m.Type)
	case msg.Platform != Platform || !msg.Direct:
		t.Fatalf("not a Discord DM: %+v", msg)
	case !snowflakeRE.MatchString(msg.ChannelThreadID) || msg.ChannelThreadID != m.ChannelID:
		t.Fatalf("channel %q became thread %q", m.ChannelID, msg.ChannelThreadID)
	case !snowflakeRE.MatchString(msg.ChannelUserID) || msg.ChannelUserID != m.Author.ID:
		t.Fatalf("author %q became user %q", m.Author.ID, msg.ChannelUserID)
	case !snowflakeRE.MatchString(msg.PlatformMessageID) || msg.PlatformMessageID != m.ID:
		t.Fatalf("message %q became id %q", m.ID, msg.PlatformMessageID)
	case msg.Text != m.Content:
		t.Fatalf("content %q became text %q", m.Content, msg.Text)
	case strings.TrimSpace(msg.Text) == "" && len(msg.Attachments) == 0:
		t.Fatalf("a message with neither text nor files was taken: %+v", msg)
	case len(msg.Attachments) > len(m.Attachments)+len(m.StickerItems):
		t.Fatalf("%d files became %d attachments", len(m.Attachments)+len(m.StickerItems), len(msg.Attachments))
	case msg.SentAt.IsZero():
		t.Fatal("no time sent")
	}
}
