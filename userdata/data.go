// Package userdata gathers everything stored about one user with one bot
// (one conversation) and renders it as JSON and as a readable Markdown
// transcript: the copy of their data a user may ask for (the chat command
// /export, GET /api/v1/conversations/{id}/export).
//
// What it leaves out, on purpose: run records (rendered prompts, tool
// calls, the model's reasoning), a session record's frozen prompt stack
// and mood snapshot, embeddings, and a job's or an attachment's workings
// (owner, lease, errors, tool call ids, idempotency keys, the platform's
// file reference). These are how the bot works, written by and for it
// and its owner, not data the user gave or was told; some hold the
// owner's prompts, and an attachment's reference fetches the file with
// the bot's credentials. Everything the user wrote or was sent, and
// everything the bot keeps about them (facts, summaries, moods, plans,
// limits that held them), is in.
package userdata

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ErasedKey marks a command's answer that erased its conversation
// (/erase): the conversation is gone, so the answer is sent and never
// stored, which would make the conversation anew.
const ErasedKey = "erased"

// Data is everything stored about one user with one bot. Its times are
// in the user's time zone (TimeZone). Field order is the JSON's.
type Data struct {
	ExportedAt     time.Time `json:"exported_at"`
	BotID          string    `json:"bot_id"`
	Platform       string    `json:"platform"`
	ConversationID int64     `json:"conversation_id"`
	UserID         string    `json:"user_id"`
	DisplayName    string    `json:"display_name"`
	// TimeZone is the zone the times are in: the conversation's, or UTC
	// when it has none (or one this machine does not know).
	TimeZone  string    `json:"time_zone"`
	Messages  []Message `json:"messages"`
	Facts     []Fact    `json:"facts"`
	Summaries []Summary `json:"summaries"`
	Jobs      []Job     `json:"jobs"`
	Mood      []Mood    `json:"mood"`
	Limits    []Limit   `json:"limits"`
}

// Message is one message of the conversation, either side's.
type Message struct {
	Seq    int64     `json:"seq"`
	Role   string    `json:"role"`
	Source string    `json:"source"`
	Text   string    `json:"text"`
	Time   time.Time `json:"time"`
	// EditedAt is when the user last edited the message; nil if never.
	EditedAt *time.Time `json:"edited_at,omitempty"`
	Edited   bool       `json:"edited,omitempty"`
	// Deleted: the user deleted it; its text is gone, the row kept.
	Deleted bool `json:"deleted,omitempty"`
	// Delivery is where a bot message sent in a turn stands ("failed":
	// it never reached the user); empty for every other message.
	Delivery string `json:"delivery,omitempty"`
	// Limited names the per-user limit that held the message.
	Limited string `json:"limited,omitempty"`
	Files   []File `json:"files,omitempty"`
}

// File describes a file sent with a message; its bytes are not stored.
type File struct {
	Name string `json:"name,omitempty"`
	Kind string `json:"kind"`
	MIME string `json:"mime,omitempty"`
	Size int64  `json:"size,omitempty"`
}

// Fact is something the bot remembers about the user.
type Fact struct {
	Key      string    `json:"key"`
	Text     string    `json:"text"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
}

// Summary is a session record: a stretch of the conversation, and what
// the bot wrote down about it (empty until it is summarised).
type Summary struct {
	RecordID int64      `json:"record_id"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	Summary  string     `json:"summary"`
}

// Job is a scheduled message, a recurring job or a planned check-in.
type Job struct {
	ID         int64      `json:"id"`
	Kind       string     `json:"kind"`
	Status     string     `json:"status"`
	Name       string     `json:"name,omitempty"`
	Text       string     `json:"text"`
	ImageURL   string     `json:"image_url,omitempty"`
	Due        time.Time  `json:"due"`
	Recurrence string     `json:"recurrence,omitempty"`
	Sent       *time.Time `json:"sent,omitempty"`
	Created    time.Time  `json:"created"`
}

// Mood is the bot's mood in the conversation at one moment.
type Mood struct {
	Time    time.Time `json:"time"`
	Valence float64   `json:"valence"`
	Arousal float64   `json:"arousal"`
	Source  string    `json:"source"`
	Reason  string    `json:"reason,omitempty"`
}

// Limit is a time a per-user limit held one of the user's messages.
type Limit struct {
	Time  time.Time `json:"time"`
	Limit string    `json:"limit"`
	Seq   int64     `json:"seq"`
}

// JSON is d as indented JSON, its fields in Data's order.
func (d Data) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the export of conversation %d: %w", d.ConversationID, err)
	}
	return append(b, '\n'), nil
}

// FileName is the export's file name without extension (".json", ".md"):
// "parley-export-telegram-2006-01-02", with the bot's id before the
// platform when it is not the default bot's. It names no user: the file
// travels (downloads, mail, a chat's attachment list, logs) where a user
// id or name would be personal data in plain sight, and the user knows
// whose it is. The date is the user's.
func (d Data) FileName() string {
	parts := []string{"parley-export"}
	if bot := safeName(d.BotID); bot != "" && bot != "default" {
		parts = append(parts, bot)
	}
	if p := safeName(d.Platform); p != "" {
		parts = append(parts, p)
	}
	return strings.Join(append(parts, d.ExportedAt.Format(time.DateOnly)), "-")
}

// safeName keeps the letters, digits, '_' and '-' of s, lower-cased: a
// name any file system and Content-Disposition header take.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return -1
	}, s)
}
