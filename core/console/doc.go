// Package console is Parley's web console: server-rendered pages under
// /console/ on http.listen where a bot owner sees the conversations, a
// conversation's transcript (with each message's source, silent turns and
// failure notices marked, the model's Markdown rendered and each turn's
// run record, reasoning included, collapsed under its reply), its jobs on a timeline with a Cancel button,
// the facts and session summaries the bot keeps, and a chart of its mood.
//
// Access is the API's token (http.api_token), entered once in a login
// form. The browser then holds a session cookie (HttpOnly, SameSite=Strict)
// that is an HMAC keyed by the token, never the token itself; changing the
// token ends every session. Forms that change state carry a per-session
// CSRF token. With no token configured the console is not served at all.
//
// The pages are html/template (every value escaped for its context, but
// the model's replies, which markup.HTML renders and sanitises) with
// inline CSS and no script; a Content-Security-Policy forbids script, so
// even markup that slipped into a page could not run. The templates are
// embedded: `go build` is the whole build.
package console
