// Package slacktest is a local fake of Slack (the Web API, Socket Mode and
// Events API delivery) for tests.
//
// NewServer starts one httptest server. The real github.com/slack-go/slack
// client works against it unchanged:
//
//	api := slack.New(srv.BotToken(),
//		slack.OptionAPIURL(srv.APIURL()),
//		slack.OptionAppLevelToken(srv.AppToken()))
//	smc := socketmode.New(api)
//
// apps.connections.open hands out a single-use ws:// URL on the same
// server, so smc.Run connects there by itself.
//
// A test plays the users: SendDM, SendChannel, SendGroupDM, SendOwn,
// SendBotMessage, EditDM, DeleteDM, UnfurlDM, ReactDM, ShareFile and
// SendEvent create events, each wrapped in an
// event_callback with an increasing event_id ("Ev00000001", …).
// SendSlashCommand and SendSlashCommandIn play a user typing a slash
// command: a slash_commands envelope in Socket Mode, or, after
// UseSlashCommandsURL, a signed form POST to that URL (sent once, as Slack
// does); WaitSlashResponse returns the app's answer (the ack's payload or
// the HTTP answer), keyed by the command's trigger_id. In Socket
// Mode (the default) every event goes to one connection, the newest, as an
// events_api envelope, and waits in a queue while none is connected; an
// envelope not acked when its connection drops (or, with WithAckTimeout,
// in time) goes out again with retry_attempt one higher. After
// UseEventsAPI, one worker POSTs the event_callbacks in order to a URL,
// signed with the signing secret, and retries a non-2xx answer, a
// transport error or a timeout (3s) with X-Slack-Retry-Num and
// X-Slack-Retry-Reason ("http_error" or "http_timeout"); Slack retries at
// most 3 times, and so does the fake. Redeliver sends an event again on
// demand, for deduplication tests.
//
// Tap plays a user tapping a button of the bot's message (found by its
// value): a block_actions payload as Slack sends one, in an interactive
// envelope over Socket Mode or, after UseInteractivityURL, one signed
// form POST (field payload) to that URL; WaitTapAck returns how the app
// acknowledged it (TapAck: the POST's status, how long it took, Late past
// Slack's 3 s, when the user sees the tap fail). Blocks of the bot's
// messages are read as Slack checks them: Block.Buttons (label,
// action_id, value) of an actions block, Block.Context of a context
// block; BotMessage.Buttons, BotMessage.Context and SentMessage.Buttons
// show them, and a chat.update with blocks replaces them (without blocks
// it keeps them). chat.postEphemeral is recorded (Ephemerals,
// WaitEphemerals); to a user not in the channel (in a DM: not its user)
// it is user_not_in_channel.
//
// The test then asserts on what the bot did: Sent, AllSent, WaitSent,
// Calls, RateLimited, Acked, WaitAcked, Deliveries, BadAcks, Connections,
// LiveConnections, WaitConnections. Faults make chosen calls fail the way
// Slack does: RateLimitNext and RateLimitAfter (HTTP 429 with
// Retry-After), FailNext (an error code), FailNextStatus (an HTML 5xx),
// RevokeTokens, Block, DropSockets and Disconnect; WithChannelRateLimit
// limits chat.postMessage per channel as Slack does, answering 429 over
// it; FailNextDownloads
// (and the other faults under FileDownloads) and SetFilesScope fail file
// downloads.
//
// ShareFile stores a file and serves it at
// URL()/files-pri/<team>-<id>/download/<name> to a GET with the bot token
// in "Authorization: Bearer"; without it Slack's answer is mimicked: 200
// with an HTML login page.
//
// Web API methods: auth.test, apps.connections.open (app-level token
// only), conversations.open, chat.postMessage, chat.update, chat.delete,
// chat.startStream, chat.appendStream, chat.stopStream,
// chat.postEphemeral and users.info,
// over POST or GET, form-encoded, multipart or JSON, the token in
// "Authorization: Bearer" or the token field. Anything else is
// unknown_method.
//
// Every message the bot makes keeps its history: BotMessage, BotMessages,
// Visible, StreamOpen and WaitBotMessages read what it shows, how it got
// there (Revision per call) and whether its stream is open; WaitShows
// waits until the channel reads exactly the texts given (unescaped), no
// stream open: a reply that grows shows its first words first. RefuseStreams
// answers the stream methods as a workspace without them; RateLimitCalls
// is a 429 storm on a method (README, "Messages that grow").
//
// Text is passed through as it is, both ways: SentMessage.Text is what the
// bot posted, still escaped (&amp; &lt; &gt; — Unescape undoes that), and
// the Send methods deliver text as given, so write it as Slack would:
// escaped, with <@U…> mentions.
//
// Simplifications, on purpose: of blocks only sections, images, buttons
// and context texts are read (attachments count as content for no_text
// but are not recorded; user messages carry no blocks); a tap's
// response_url is not served, and taps are not retried over HTTP; no threads beyond recording thread_ts; conversations.open opens
// DMs with one user only (more is not_implemented); a public channel or
// group DM is known once an event came from it; the bot's own messages
// are echoed only for DMs; Events API retries come after WithRetryDelay,
// not Slack's minutes; a socket envelope is retried at most 3 times on its
// own (disconnects and ack timeouts together); signatures and timeouts use
// real time whatever WithNow says; no rate limiting unless scheduled or
// WithChannelRateLimit is given; a slash command's response_url is not
// served.
package slacktest
