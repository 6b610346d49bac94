// Package discordtest is a local fake of Discord (REST API v9 and the
// gateway websocket) for tests.
//
// NewServer starts one httptest server that serves both. The real
// github.com/bwmarrin/discordgo client works against it unchanged when it
// uses Server.HTTPClient, which rewrites https://discord.com to Server.URL;
// the gateway URL that GET /api/v9/gateway returns already points at the
// fake, so Session.Open connects there by itself.
//
// A test plays the users: SendDM, SendFiles, SendVoiceMessage,
// SendSticker, SendGuild, SendOwn, EditDM, Tap, TapGuild, Dispatch and
// InjectFrame create gateway events, which every identified session receives as dispatches
// with increasing sequence numbers. It then asserts on what the bot did:
// Sent, AllSent, WaitSent, Typing, Calls, RateLimited, Downloads,
// Identifies, Resumes, Intents, and the bot's edits and deletes: Message,
// Edits, Visible, WaitVisible, and WaitShows, which waits until the
// channel reads exactly the texts given: a reply the bot grows by edits
// shows its first words first, so a test reading a reply waits there.
//
// Buttons: a message's components (action rows of buttons, checked
// against Discord's limits) are recorded as the user sees them
// (SentMessage.Components, Buttons: label, custom_id, style, disabled),
// replaced by an edit or an UPDATE_MESSAGE. Tap(user, messageID,
// customID) plays a user tapping an enabled button of the bot's message
// in their DM: INTERACTION_CREATE (type 3, user not member, a fresh id
// and token), delivered whatever the intents; TapGuild does it in a
// server (guild_id, member). The bot's callbacks (POST
// /interactions/{id}/{token}/callback, route "interactions.callback") are
// recorded per interaction (Interaction, Interactions, WaitCallback:
// type, content, flags, components, the status answered); type 7 edits
// the tapped message. As on Discord, a callback more than 3 s after the
// tap (WithInteractionTimeout, WithNow's clock) is 404 / 10062 Unknown
// interaction, a second one 400 / 40060, a wrong token 401 / 50027. WaitReady is the barrier to pass after Session.Open and before
// Session.Close. Faults (RateLimitNext, FailNext, FailNextDownloads,
// Block, DisconnectGateway) make chosen calls fail, or the gateway drop,
// the way Discord does (LoseNextAnswer: a call acts and its answer is
// lost); edits are limited to 5 per 5 s per channel as on Discord
// (WithEditRateLimit); WithChannelRateLimit limits each channel's
// messages as Discord's per-route limit does, answering 429 over it.
//
// The bot's reactions on users' messages (PUT and DELETE
// /channels/{id}/messages/{mid}/reactions/{emoji}/@me, route "reactions";
// 204 whether or not the reaction was there, 404 / 10008 for an unknown
// message) show in BotReactions.
//
// Files users send are stored and served on the fake's origin at
// Discord's CDN paths (/attachments/..., /stickers/...), so a client
// fetches them as it would from cdn.discordapp.com. Attachment URLs are
// signed and expire as Discord's do (ex, is, hm; a day, or
// SetAttachmentURLLifetime): an expired or unsigned one gets 404 "This
// content is no longer available.", ExpireAttachmentURLs expires them all
// at once, and POST /attachments/refresh-urls (route
// "attachments.refresh") signs the URLs of files it still has afresh.
//
// Simplifications, on purpose: the bot sends text messages only (files
// in a multipart body are accepted and ignored), and buttons are the only
// components; one shard; payloads are
// plain JSON text frames whatever compression the client asks for; no
// intents filtering;
// a nonce is remembered for the life of the server, not a few minutes;
// channels are known once an event came from them, a DM channel was
// opened, or AddChannel was called.
package discordtest
