package adaptertest

import (
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/core"
)

// User is a person on the fake platform.
type User struct {
	// ID is the platform's user id, as the adapter reports it in
	// InboundMessage.ChannelUserID.
	ID string
	// Name is the display name the adapter should report.
	Name string
}

// Sent is one message the bot delivered to the fake platform.
type Sent struct {
	// ChannelThreadID is the chat it was sent to.
	ChannelThreadID string
	// Text is the part as the bot meant it: a rig whose platform encodes
	// markup (escapes, entities) decodes it back first. For an image it is
	// the caption shown with it ("" if none).
	Text string
	// Shown is what a user sees of the message (for an image, of its
	// caption) when the platform renders markup: the visible text and its
	// styled spans, read the way the platform reads them (see
	// adapters/markup/markuptest). Nil when the rig cannot tell; the rich
	// text cases then skip.
	Shown *markuptest.Rendered
	// ImageURL is the image the message shows, "" for a text message.
	ImageURL string
	// PlatformMessageID is the id the fake platform gave it; empty only
	// when Rig.NoMessageIDs is set.
	PlatformMessageID string
	// At is when the fake platform accepted it (wall clock).
	At time.Time
}

// Rig is one adapter under test with its fake platform. Required fields
// must be set; an optional func left nil skips the cases that need it.
type Rig struct {
	// Adapter is a fresh adapter, provisioned and validated but not
	// started, pointed at the fake platform. The suite starts and stops it.
	Adapter core.Adapter

	// DM makes user send text to the bot in a direct message and returns
	// the channel thread id the adapter must report for it. Required.
	DM func(t *testing.T, user User, text string) (channelThreadID string)
	// ThreadOf is the channel thread id of user's DM with the bot, for
	// sending to a user who has written before. Required.
	ThreadOf func(t *testing.T, user User) string
	// Sent lists what the bot delivered to channelThreadID, in order.
	// It may lag behind Send (a browser's event stream); the suite waits
	// for a sentinel message rather than trusting one look. Required.
	Sent func(t *testing.T, channelThreadID string) []Sent

	// Group makes user send text in a group chat the bot is in.
	Group func(t *testing.T, user User, text string)
	// Channel posts text in a channel the bot is in.
	Channel func(t *testing.T, text string)
	// Own makes the platform deliver a message the bot itself sent.
	Own func(t *testing.T, text string)
	// Edit makes user edit an earlier DM to text.
	Edit func(t *testing.T, user User, text string)

	// RateLimitNextSend makes the fake answer the next send to any chat
	// with a rate-limit error asking to retry after the given delay; the
	// send after it succeeds. The fake's retry-after unit is the
	// platform's (Telegram: whole seconds).
	RateLimitNextSend func(t *testing.T, retryAfter time.Duration)
	// RateLimitAfter is like RateLimitNextSend but lets n sends succeed
	// first (for a split reply whose later part is limited).
	RateLimitAfter func(t *testing.T, n int, retryAfter time.Duration)
	// RefuseNextMarkup makes the fake refuse the next formatted send as
	// malformed markup, the way the platform does (Telegram's 400 "can't
	// parse entities", Discord's 400 Invalid Form Body, Slack's
	// invalid_blocks or invalid_arguments); the plain text the adapter
	// sends instead, and every send after it, are accepted.
	RefuseNextMarkup func(t *testing.T)
	// RefuseMarkupAfter is like RefuseNextMarkup but lets n formatted
	// sends through first (for a split reply whose later part is
	// refused).
	RefuseMarkupAfter func(t *testing.T, n int)
	// SendFile makes user send f in a DM (a photo, a voice note, a
	// document, a sticker, with f.Caption as its text) and returns the
	// channel thread id; the fake serves f.Data for the adapter to fetch.
	// Nil skips the file cases.
	SendFile func(t *testing.T, user User, f File) (channelThreadID string)
	// FileKinds are the kinds of file the platform has, for the file
	// cases (nil: image, voice, document and sticker).
	FileKinds []core.AttachmentKind
	// FailNextFetch makes the fake fail the next downloads of a file (a
	// 5xx each time, more than the adapter retries), then serve again.
	FailNextFetch func(t *testing.T)
	// FilesSent lists the files the bot uploaded to channelThreadID, in
	// order, as the fake received them. Required of a core.FileSender
	// (SendFiles fails without it); the case skips for other adapters.
	FilesSent func(t *testing.T, channelThreadID string) []SentFile
	// VoiceAs is how the platform shows a voice note the bot sends when
	// it has no voice note of its own (Slack: an audio file; the web
	// page: an audio player); "" for a voice note.
	VoiceAs core.AttachmentKind
	// VoiceLength says the platform shows a voice note's length
	// (Discord's duration_secs), which FilesSent reports in
	// SentFile.Seconds; SendFiles then checks it.
	VoiceLength bool
	// FileIDs says SendFiles's result names the files rather than the
	// messages they make (Slack's files.completeUploadExternal answers
	// file ids, not the message's ts): SentFile.PlatformMessageID is then
	// each file's id.
	FileIDs bool
	// Block makes user block the bot: sends to them fail permanently.
	Block func(t *testing.T, user User)
	// UnknownThread is a chat id the platform does not know (a user who
	// never wrote to the bot), for the permanent-error case.
	UnknownThread string

	// TypingShown counts the typing indications the fake saw in
	// channelThreadID; nil when the platform has none.
	TypingShown func(t *testing.T, channelThreadID string) int

	// Tap makes user tap the button whose Choice.Data is data on the
	// bot's message platformMessageID in their DM (Telegram's
	// callback_query, Discord's component interaction, Slack's block
	// action), and returns whether the fake has seen that tap
	// acknowledged (nil: the platform has no acknowledgement). Nil skips
	// the Tap case.
	Tap func(t *testing.T, user User, platformMessageID, data string) (acknowledged func() bool)
	// EditDM makes user edit their DM platformMessageID to text; nil
	// skips the UserEdit case.
	EditDM func(t *testing.T, user User, platformMessageID, text string)
	// DeleteDM makes user delete their DM platformMessageID; nil (the
	// platform tells bots of no deletion: Telegram) skips UserDelete.
	DeleteDM func(t *testing.T, user User, platformMessageID string)
	// React makes user add emoji to the bot's message platformMessageID
	// in their DM, or take it back (removed); nil skips UserReaction.
	React func(t *testing.T, user User, platformMessageID, emoji string, removed bool)
	// BotReactions are the bot's own reactions on message
	// platformMessageID of channelThreadID, as the fake shows them; nil
	// skips BotReacts (core.Reactor, core.Unreactor).
	BotReactions func(t *testing.T, channelThreadID, platformMessageID string) []string

	// Users are the people the suite plays, in order; nil means Alice and
	// Bob. A platform whose ids have a fixed shape (the terminal's
	// "console:<user>") supplies its own. At least two unless SingleUser.
	Users []User
	// SingleUser says the platform has exactly one user (the terminal): the
	// suite uses only Users[0] and skips the cases that need two people.
	SingleUser bool
	// WholeRichText says the platform shows rich text of any length as
	// one message (the web chat's HTML): the long rich text cases then
	// expect one part where a platform with a limit has several.
	WholeRichText bool
	// NoCodeLanguage says the platform's code blocks show no language
	// (Slack's mrkdwn has none), so the code block case does not ask for
	// one.
	NoCodeLanguage bool
	// NoMessageIDs says the fake cannot observe the platform message ids of
	// what the bot sent (the terminal prints text only), so Sent leaves
	// PlatformMessageID empty; the suite then checks that SendResult holds
	// one distinct, non-empty id per part instead of matching them.
	NoMessageIDs bool
	// Quiesce, when set, is called by the Stop case after the adapter has
	// stopped and before the goroutine leak check. It ends goroutines that
	// belong to the fake platform or the host rather than the adapter: idle
	// HTTP connections of an httptest server, an input pipe the host owns
	// and closes at exit. It must not do the adapter's work for it (a
	// stream the adapter should have ended is the adapter's leak).
	Quiesce func(t *testing.T)
}
