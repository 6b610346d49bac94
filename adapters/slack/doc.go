// Package slack connects Parley to a Slack app: users chat with the bot in
// its DMs (the app's Messages tab), and the bot's replies go back through
// chat.postMessage.
//
// The adapter builds on github.com/slack-go/slack. Start checks the bot
// token with auth.test, which also gives the bot's own user id. Events
// then arrive one of two ways:
//
//   - mode: socket (the default) opens a Socket Mode websocket with the
//     app-level token (apps.connections.open). slack-go reconnects after a
//     drop or a disconnect request; when it gives up (the app token was
//     revoked) the adapter starts it again with backoff, and Health reports
//     the connection down meanwhile.
//   - mode: events serves the Events API at POST /webhooks/slack/events on
//     Parley's HTTP server. A request whose X-Slack-Signature does not match
//     the signing secret, or whose timestamp is more than 5 minutes away,
//     gets 401 and nothing is processed; url_verification is answered.
//
// DMs are message events with channel_type "im". Messages with a subtype
// other than file_share (bot_message, joins), from a bot, or from the
// bot's own user are ignored. A user's edit or deletion of a DM
// (message_changed, message_deleted) goes to the host's HandleChange, a
// user's reaction on a DM message (reaction_added, reaction_removed) to
// its HandleReaction, the common Slack emoji names as Unicode (wire);
// React and Unreact add and take back the bot's (reactions.add, .remove). The files a user shares arrive as
// core.Attachments whose Ref is the file's url_private_download;
// FetchAttachment downloads it with the bot token (scope files:read),
// which it sends only to files.slack.com or the Web API's host. Slack's escaping and <…> references in the
// text are written out (<@U1|ada> becomes @ada, &amp; becomes &).
//
// Each event is handed to the core within an ack budget (2.5 s of Slack's
// 3): the envelope is acked, or the POST answered 200, once the core has
// stored the message; the answer to the user is generated asynchronously.
// When the core cannot take it in time the event is left unacked (503 in
// events mode) and Slack delivers it again. Event ids already handed to
// the core are remembered for an hour, so Slack's retries reach the core
// once.
//
// Send splits text at 4,000 characters and escapes & < >. Every post first
// waits for its slot on a adapters/pace Pacer keyed by channel (send_rate: by
// default chat.postMessage's 1 per second per channel after a burst of 3),
// replies ahead of scheduled messages, so that Slack's limits are kept
// rather than found by 429s. A 429 is waited out for the Retry-After
// Slack gives and the part is posted once more (Slack did not post it);
// 5xx answers and refused connections are retried with backoff. Errors
// retrying cannot fix (channel_not_found, is_archived, msg_too_long…) are
// *core.PermanentError. Slack has no typing indicator for bots, so the
// adapter does not implement core.TypingIndicator.
//
// Replies grow as the model writes them (core.Streamer, adapters.slack.
// streaming): with chat.startStream/appendStream/stopStream, or by
// chat.postMessage then chat.update where the workspace refuses those;
// README, "Replies that grow".
//
// Choices (core.OutboundMessage.Choices) are Block Kit buttons on the
// last part of a message: the text as a section, then an actions block
// with a button per choice (action_id choice_<i>, value the core's data).
// A tap is a block_actions interaction, over Socket Mode or POSTed to
// /webhooks/slack/interactivity in events mode (signed like events); in a
// DM it goes to the Host's HandleTap and is acked within Slack's 3 s.
// The core's notice is then shown with chat.postEphemeral, and a choice
// closes the question: chat.update replaces its buttons with a context
// line "✓ <label>" (README, "Buttons").
//
// Tokens and the signing secret never reach logs or errors: slack-go's own
// loggers are silenced and errors are scrubbed.
package slack
