// Package config loads Parley's YAML configuration strictly: unknown keys,
// wrong types and bad values are errors naming the file, line and key.
//
// Loading goes in four steps, each kept on the parsed yaml.Node tree so that
// line numbers stay right:
//
//  1. The file is parsed into a yaml.Node (a syntax error names file and line).
//  2. Environment references are expanded in every scalar value (never in
//     keys): ${VAR}, ${VAR:-default} (default used when VAR is unset or
//     empty) and $$ for a literal $. Expansion happens after parsing, so an
//     environment value containing YAML syntax (": ", newlines) stays one
//     string and cannot change the document's structure. A scalar that held a
//     reference loses its resolved tag, so "${PORT:-8080}" decodes into an int.
//  3. The tree is decoded strictly onto DefaultWithEnv's values by a small
//     reflection-driven decoder: only yaml-tagged fields are config, a key
//     absent or null keeps its default, an unknown key or a value of the wrong
//     shape is an error. Durations are Go durations ("1500ms", "2m") and never
//     negative. The adapters: and plugins: maps keep each section undecoded as
//     a Section; the module that owns it decodes it with Section.Decode under
//     the same rules.
//  4. Values are validated, each error naming the line of the offending value
//     (or none when the value is a default).
//
// bots: is decoded last, whatever its place in the file: each entry is
// decoded onto a copy of the top-level sections it inherits (BotConfig),
// and its errors carry its path ("bots[1].llm.timeout"). BotConfigs gives
// the Config each bot runs with; without bots: that is one bot,
// DefaultBotID, with the top level's values.
//
// Every problem found is reported at once, in file order, as *Error values
// joined with errors.Join, so an owner can fix a file in one pass.
//
// Tokens, API keys and DSNs are Secret values: they print, log and marshal
// as "[redacted]". Section values print only whether they are enabled, since
// their raw YAML may hold a module's secrets.
package config
