// Package mcptest helps test code that talks to MCP servers: Parley's own
// MCP client (mcp), end-to-end tests of `parley run`, and plugin
// authors' tests.
//
//   - TestServerBinary builds the stdio test server in ./testserver (tools
//     echo, add, sleep, image, crash, getenv, add_tool; misbehaving modes
//     -garbage, -noinit and -stubborn; -spawn and -pidfile for orphan
//     checks) once per test process.
//   - EverythingServer installs the official reference server
//     @modelcontextprotocol/server-everything with npm (once, into a cache
//     directory) for interoperability tests; it fails the test when node or
//     npm is missing rather than skipping it.
//   - NewHTTPServer and NewSSEServer serve tools declared as Tool values
//     over streamable HTTP or the older SSE transport, on httptest.
package mcptest
