// Package telegram connects Parley to Telegram bots: users chat with the bot
// in private chats, and the bot's replies go back through the Bot API.
//
// The adapter builds on github.com/go-telegram/bot for the Bot API methods
// (getMe, sendMessage, sendChatAction, setWebhook, deleteWebhook) but runs
// its own getUpdates loop: the library decodes a whole batch of updates at
// once, so one update it cannot decode would fail every poll and stall the
// bot forever. The adapter's loop decodes each update on its own, skips
// (and logs) the ones it cannot read, and confirms an update to Telegram
// only after the core has taken it, so a restart redelivers what was not
// handled.
//
// Only "message" updates in private chats (and taps, below) become
// core.InboundMessage: text,
// or a file (photo, voice, audio, video, document, sticker) described as a
// core.Attachment whose Ref is the file_id, with the caption as the text.
// Groups, channels, edits, messages from bots and messages with neither
// text nor a file are ignored and logged at debug level. FetchAttachment
// (core.AttachmentFetcher) downloads a file through getFile and the file
// endpoint, bounded in size and time, retried like a send.
//
// In webhook mode the adapter serves POST /webhooks/telegram on Parley's
// HTTP server (core.HTTPMounter) and checks the
// X-Telegram-Bot-Api-Secret-Token header itself: a missing or wrong secret
// gets 401 and the update is not processed.
//
// Send splits text to Telegram's 4096-character limit, counted as Telegram
// counts it (UTF-16 code units), retries a part after the delay a 429 asks
// for and retries 5xx answers with backoff, without ever resending a part
// already delivered. The model's Markdown goes in MarkdownV2, every part
// formatted (markup.SplitTelegram); a part Telegram still refuses ("can't
// parse entities") is sent again as plain text, so no reply is lost to
// markup. Failures retrying cannot fix (the user blocked the bot, the chat
// does not exist) are *core.PermanentError.
//
// A question's choices (OutboundMessage.Choices, Capabilities.Choices)
// go as an inline keyboard on the last message of a reply, a streamed one
// included once finished (package buttons shapes keyboards and taps). A
// tap arrives as a callback_query (asked for in allowed_updates): in a
// private chat it reaches Host.HandleTap as an InboundMessage with Tap
// set; every tap is
// acknowledged with answerCallbackQuery and the core's notice, and a tap
// that made the choice replaces the keyboard with one "✓ <label>" button
// keeping the tapped data (taps.go).
//
// React and Unreact (core.Reactor, core.Unreactor) set the bot's one
// reaction on a message with setMessageReaction; Telegram takes a fixed
// set of emoji from bots, onto which package reactions maps the model's
// emoji, refusing the rest with an error that names the set.
//
// Every message-creating call waits for its slot at the send_rate pace
// (adapters/pace; by default Telegram's limits: 30 a second per bot, 1 a
// second per chat after a burst of 3), replies ahead of scheduled
// messages, so a burst goes out at Telegram's pace rather than into 429s.
//
// The bot token is in every Bot API URL; the adapter removes it from every
// error it returns or logs.
package telegram
