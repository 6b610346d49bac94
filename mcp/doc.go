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
// Images an MCP tool returns can be passed on to the user. In a turn
// (Tools with a *core.Turn) with at least one MCP tool up, the model is
// also offered share_image {"image": HANDLE}. Every PNG, JPEG, GIF or WebP
// image (content or blob resource) of a successful result is kept for the
// turn under a handle, "mcp-1", "mcp-2"…, that its note in the result
// names, whether or not the model can see it: "[image/png image, 12 KB:
// attached as image 1; to show it to the user, call share_image
// {"image":"mcp-1"}]". share_image appends the image to core.Turn.Files,
// so it goes with the turn's reply, the reply's text its caption. An
// unknown, missing or mistyped handle, an image shared already, or a
// reply with core.MaxReplyPictures files already is a tool error the model
// reads. The images live in a shelf made by Tools for that turn and
// reached only through its tools: nothing is kept across turns or users,
// and a turn keeps at most 8 images, 16 MB together (later ones are named
// in the result as not sendable).
//
// Env and header values, and the URL's password and query, are secrets:
// they are taken out of everything logged or returned that came from a
// server, its process or the network (values shorter than four characters
// excepted).
package mcp
