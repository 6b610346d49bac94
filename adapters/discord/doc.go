// Package discord connects Parley to a Discord bot: users chat with the bot
// in direct messages, and the bot's replies go back through the REST API.
//
// The adapter builds on github.com/bwmarrin/discordgo. It connects to the
// gateway with the DirectMessages intent only: DMs arrive as MESSAGE_CREATE
// events without a guild id and carry their content without the privileged
// MESSAGE_CONTENT intent. Guild messages, edits, the bot's own messages and
// messages from other bots are ignored; a malformed event is logged and
// skipped, and a panic while handling one is recovered.
//
// discordgo's own reconnect loop cannot be stopped once it runs (it retries
// for ever, outliving Session.Close), so the adapter turns it off and
// reconnects itself: after a disconnect it reopens the session, which
// RESUMEs it, with backoff, until it succeeds or the adapter stops. Health
// reports the gateway down while it is disconnected.
//
// api_url is applied by the HTTP client, never by changing discordgo's
// process-wide Endpoint variables: the client's transport sends every
// request to the api_url origin instead of https://discord.com, and the
// gateway URL then comes from that origin's GET /api/v9/gateway.
//
// Send splits text at Discord's 2000-character limit and sends each part
// with a nonce derived from the message's idempotency key and
// enforce_nonce, so Discord drops a part it has already accepted (a resend
// after a crash, or a retry after a lost answer). Every message request
// first waits for its slot on a adapters/pace Pacer keyed by channel
// (send_rate: by default Discord's 5 per 5 s per channel), replies ahead
// of scheduled messages, so that the limits are kept rather than found by
// 429s. A 429 is waited out (as long as the send's deadline allows) and 5xx
// answers and broken connections are retried a few times; failures retrying
// cannot fix (the user does not accept the bot's DMs, an unknown channel,
// an invalid body) are *core.PermanentError.
//
// Replies grow as the model writes them (core.Streamer; streaming: off
// turns it off): the first update creates the message with the first part's
// nonce, later ones edit it, each split as Send splits the text so far.
// Partial updates take the pacer's lowest slot (TryTake), keep to Discord's
// 5 edits per 5 s per channel, never wait in discordgo's limiter, and are
// skipped, never retried; Finish goes out with a send's retries.
//
// A question's choices (core.OutboundMessage.Choices) are buttons on the
// message's last part: action rows of up to five, custom_id the choice's
// Data. A tap is an INTERACTION_CREATE (MESSAGE_COMPONENT), which needs no
// intent; in a DM it goes to the host's HandleTap on the gateway's
// goroutine, in order with the DMs, and the interaction is acknowledged
// within Discord's 3 s: UPDATE_MESSAGE when the tap chose (the buttons
// disabled, the chosen one green with a ✓: acknowledged and closed in one
// call), an ephemeral reply with the core's notice, or a deferred update.
// A late or failed acknowledgement of a choice still closes the buttons,
// by an edit. Taps in servers are acknowledged and ignored.
//
// Files a user sends in a DM (attachments, voice messages, stickers) are
// described in InboundMessage.Attachments, with their CDN URL as Ref, and
// a DM with files but no text is delivered too. FetchAttachment downloads
// one from Discord's CDN (or the api_url origin standing in for it), only
// from those origins, without the bot token, bounded in size and time.
//
// The bot token travels in the Authorization header and the gateway
// IDENTIFY; discordgo's own logging, which can print the IDENTIFY, is
// silenced, and the adapter logs through log/slog only.
package discord
