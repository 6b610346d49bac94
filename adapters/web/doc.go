// Package web is Parley's browser chat: anyone can talk to the bot from a
// browser on Parley's own HTTP server, with no platform token.
//
// The adapter mounts a self-contained chat page at "/" (one embedded HTML
// file, no build step, no external assets) and three endpoints under /web/:
// POST /web/messages hands a typed message to the core, GET /web/events is a
// Server-Sent Events stream of the bot's replies and typing signals for one
// browser, GET /web/history returns the conversation so far so that a
// page that loads, reloads or reconnects shows everything, and GET
// /web/status says whether the bot's model is answering, for the page's
// banner. The model's replies (Markdown) reach the page as sanitised HTML
// beside their text. While the model writes a reply, the stream carries
// it growing ("partial" events, each the whole text so far), then the
// finished message with the same id, or a "discard" event if it is taken
// back; partials are never stored or replayed.
//
// Each browser keeps a random client id; it is both the conversation's
// channel_thread_id and channel_user_id on the "web" platform. Replies are
// pushed to every open stream of that client. A client too slow to keep up is
// disconnected rather than allowed to block Send: its page reconnects and
// reloads the history, which the core keeps.
//
// Anyone who can reach the server can use the chat, so it defends the
// owner's model bill and connections (Limits): posts per browser and per
// address, new conversations per address, and event streams per browser,
// per address and in all; over a limit the answer is 429 (503 when the
// chat is full) with Retry-After, and nothing reaches the core. It takes
// JSON only, and only from its own page: another site's page is refused,
// so a page the owner visits cannot make a bot on localhost call the model.
package web
