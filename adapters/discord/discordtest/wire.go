package discordtest

import (
	"encoding/json"
	"fmt"
	"time"
)

// Wire shapes of Discord objects, with the fields discordgo reads.

type wireUser struct {
	ID            string  `json:"id"`
	Username      string  `json:"username"`
	GlobalName    *string `json:"global_name"`
	Discriminator string  `json:"discriminator"`
	Avatar        *string `json:"avatar"`
	Bot           bool    `json:"bot,omitempty"`
	Verified      bool    `json:"verified,omitempty"`
	PublicFlags   int     `json:"public_flags"`
}

type wireMember struct {
	Roles    []string `json:"roles"`
	JoinedAt string   `json:"joined_at"`
	Deaf     bool     `json:"deaf"`
	Mute     bool     `json:"mute"`
}

type wireReference struct {
	MessageID string `json:"message_id"`
	ChannelID string `json:"channel_id,omitempty"`
	GuildID   string `json:"guild_id,omitempty"`
}

type wireMessage struct {
	ID               string            `json:"id"`
	ChannelID        string            `json:"channel_id"`
	GuildID          string            `json:"guild_id,omitempty"`
	Author           wireUser          `json:"author"`
	Member           *wireMember       `json:"member,omitempty"`
	Content          string            `json:"content"`
	Timestamp        string            `json:"timestamp"`
	EditedTimestamp  *string           `json:"edited_timestamp"`
	TTS              bool              `json:"tts"`
	MentionEveryone  bool              `json:"mention_everyone"`
	Mentions         []wireUser        `json:"mentions"`
	MentionRoles     []string          `json:"mention_roles"`
	Attachments      []json.RawMessage `json:"attachments"`
	Embeds           []json.RawMessage `json:"embeds"`
	Pinned           bool              `json:"pinned"`
	Type             int               `json:"type"`
	Flags            int               `json:"flags"`
	Nonce            json.RawMessage   `json:"nonce,omitempty"`
	MessageReference *wireReference    `json:"message_reference,omitempty"`
	StickerItems     []wireStickerItem `json:"sticker_items,omitempty"`
	Components       []wireComponent   `json:"components"`
}

type wireChannel struct {
	ID            string     `json:"id"`
	Type          int        `json:"type"`
	GuildID       string     `json:"guild_id,omitempty"`
	Name          string     `json:"name,omitempty"`
	LastMessageID *string    `json:"last_message_id"`
	Recipients    []wireUser `json:"recipients,omitempty"`
	Flags         int        `json:"flags"`
}

// frame is one gateway payload.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s"`
	T  *string         `json:"t"`
}

// discordTime formats t the way Discord does: ISO 8601 with microseconds
// and an explicit offset, which discordgo parses as RFC 3339.
func discordTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000-07:00")
}

func (u User) wire() wireUser {
	w := wireUser{ID: u.ID, Username: u.Username, Discriminator: "0"}
	if u.GlobalName != "" {
		g := u.GlobalName
		w.GlobalName = &g
	}
	return w
}

// botWire is the bot user as Discord shows it.
func (s *state) botWire() wireUser {
	w := s.bot.wire()
	w.Bot = true
	w.Verified = true
	return w
}

func (s *state) channelWire(ch *channel) wireChannel {
	w := wireChannel{ID: ch.id, Type: ch.typ, GuildID: ch.guildID}
	if ch.typ == channelDM {
		w.Recipients = []wireUser{s.userLocked(ch.recipient).wire()}
	} else {
		w.Name = "channel-" + ch.id
	}
	return w
}

// newMessageWire is a message with the empty lists Discord always sends.
func newMessageWire(id string, ch *channel, author wireUser, content string, at time.Time) wireMessage {
	return wireMessage{
		ID:           id,
		ChannelID:    ch.id,
		GuildID:      ch.guildID,
		Author:       author,
		Content:      content,
		Timestamp:    discordTime(at),
		Mentions:     []wireUser{},
		MentionRoles: []string{},
		Attachments:  []json.RawMessage{},
		Embeds:       []json.RawMessage{},
		Components:   []wireComponent{},
	}
}

func fmtWant(n int, channelID string, got []SentMessage) string {
	return fmt.Sprintf("%d messages in channel %s, got %d: %+v", n, channelID, len(got), got)
}
