// Package console is Parley's web console: server-rendered pages under
// /console/ on http.listen where a bot owner sees how the bot is doing
// and what it did.
//
//   - The overview (/console/): the health of each component /healthz
//     knows (adapters, the model, MCP servers) with its last error; an
//     SVG chart of messages and turns over the last hour and day;
//     failures (turns, sends, jobs) linked to where they happened; token
//     usage per day and model with an estimated cost from
//     console.prices; the pending jobs and the next one due; the
//     conversations last active.
//   - Jobs (/console/jobs): every conversation's jobs on a timeline (due
//     within a day, within a week; in the owner's zone and the user's),
//     recurring jobs with their next occurrences, what was recently sent
//     or failed; filters by status and platform; Cancel on pending jobs
//     and Retry on failed ones (a new attempt, due now, the scheduler
//     woken). A job's page (/console/jobs/{id}) says everything about it.
//   - Conversations (/console/conversations): search by name, user id
//     and text; each conversation's page has its jobs, token usage,
//     transcript (the model's Markdown rendered and sanitised as the web
//     chat shows it, images as thumbnails fetched through the adapter,
//     voice transcripts, and collapsed under each reply its tool calls
//     with arguments and results, reasoning, prompt template and run
//     record), mood chart, facts and summaries.
//
// The overview, the jobs pages and a conversation update live: a small
// embedded script (static/console.js, served from the console itself)
// opens a server-sent event stream, and the server builds the page again
// every Config.LiveEvery and sends the sections that changed, rendered by
// the same templates. Without script the pages are complete; a reload
// shows the same.
//
// Access is the API's token (http.api_token), entered once in a login
// form. The browser then holds a session cookie (HttpOnly, SameSite=Strict)
// that is an HMAC keyed by the token, never the token itself; changing the
// token ends every session. Forms that change state carry a per-session
// CSRF token. With no token configured the console is not served at all.
//
// The pages are html/template (every value escaped for its context, but
// the model's replies, which markup.HTML renders and sanitises) with
// inline CSS; a Content-Security-Policy allows only the console's own
// script (no inline script) and connections to the console, so even
// markup that slipped into a page could not run. Templates and script are
// embedded: `go build` is the whole build, and nothing is fetched from
// another site.
package console
