// Package telegramtest is a local fake of the Telegram Bot API for tests.
//
// NewServer starts an httptest server that speaks the Bot API wire format
// closely enough that the real github.com/go-telegram/bot client, pointed at
// it with bot.WithServerURL(srv.URL()), works end to end: getMe, long
// polling with getUpdates, webhooks (setWebhook, deleteWebhook,
// getWebhookInfo), sendMessage, sendPhoto, sendChatAction, getFile, file
// downloads, drafts (sendMessageDraft: Drafts, ShownDraft), edits and
// deletions (editMessageText, deleteMessage: Edits, Messages, Message),
// inline keyboards (reply_markup, recorded as SentMessage.Buttons and
// checked as Telegram checks them; editMessageReplyMarkup; Buttons),
// taps on them (Tap, TapGroup: a callback_query update; answerCallbackQuery
// taken once within CallbackExpiry: CallbackAnswers, WaitCallbackAnswers,
// Unanswered), the bot's reactions (setMessageReaction, one of Telegram's
// fixed set of emoji on a message that is there: BotReaction,
// WaitBotReaction), and the bot's command menu (setMyCommands, validated as Telegram does,
// deleteMyCommands and getMyCommands; MyCommands shows what was
// registered).
//
// A test plays the users: SendPrivate, SendGroup, SendChannelPost, SendOwn,
// EditPrivate, ReactPrivate, InjectRaw and, for files, SendPhoto, SendVoice, SendAudio,
// SendVideo, SendDocument and SendSticker create updates, which wait in a
// queue for getUpdates or are POSTed to the webhook. It then asserts on what the bot
// did: Sent, AllSent, WaitSent, ChatActions, Calls, Webhook. Faults
// (FailNext, FailAfter, FailNextDownload, Block, RevokeToken, FloodWait,
// RefuseMethod) make chosen calls fail the way Telegram does. WithLatency
// gives every call a round trip, and
// WithRateLimits answers 429 to messages over Telegram's flood limits (a
// one-second sliding window per bot, a token bucket per chat), counted by
// SendStats.
//
// Simplifications, on purpose: the bot sends only text messages and photos
// by URL; MarkdownV2 (texts and captions) is checked by a small parser
// (markuptest.TelegramV2: escapes, bold, italic, underline, strikethrough,
// spoiler, code, pre, links, block quotes) that reports the common Telegram
// errors but not every one; HTML and legacy Markdown are accepted unchecked;
// allowed_updates is honoured for the updates the helpers make only (a
// kind left out is dropped as it is made, counted by Dropped; InjectRaw's
// go through); a chat is known once an update from or to it
// was injected (or AddChat was called).
package telegramtest
