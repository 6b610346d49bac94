// Package mcp is Parley's client for Model Context Protocol servers: it
// offers their tools to the model, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// A Manager is a plugin (core.Plugin, core.ToolProvider, core.Service). New
// only checks the configuration; Start runs one goroutine per server and
// returns at once. A stdio server is a process (Command, Args, Env added to
// Parley's environment) in a process group of its own, killed by the kernel
// if Parley dies (Linux); its stderr is logged at debug. An HTTP server is
// reached over streamable HTTP with the configured Headers, or, when the
// first POST is answered with a 4xx other than 401, 403, 408 or 429, over
// the older SSE transport.
//
// Each loop connects, initializes and lists the tools (every page) within
// InitTimeout, then follows the session, listing again on
// notifications/tools/list_changed. When the session ends or cannot be
// opened, the server is "down: <reason>", its tools are withdrawn, calls
// in flight fail, and the loop tries again after an exponential backoff
// (RestartMin to RestartMax, back to RestartMin after a session that lasted
// RestartMax). The first failure of an episode is logged at warn, retries at
// debug. Stop cancels the loops and closes the sessions: stdin is closed,
// and a server still running after two seconds gets SIGTERM, then SIGKILL,
// to its whole process group; children it left behind are killed too.
//
// The model sees a tool as SERVER__TOOL, with its description and input
// schema ({"type":"object","properties":{}} when the server gives none).
// Characters outside [a-zA-Z0-9_-] become "_", and a name longer than 64
// keeps its first 55 characters and a hash of the original; a renamed tool
// is logged once. Arguments are checked against the tool's schema (compiled
// once per listing) before the call, and a call is bounded by the server's
// Timeout. Results become text (and, with Vision, images as data URLs),
// capped at MaxResultChars. Every failure is returned as an error the model
// reads (unavailable server, removed tool, invalid arguments, timeout, the
// tool's own error); none fails the user's turn.
//
// Env and header values, and the URL's password and query, are secrets:
// they are taken out of everything logged or returned that came from a
// server, its process or the network (values shorter than four characters
// excepted).
package mcp
