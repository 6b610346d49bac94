// Package media turns the files users send into what a model can read:
// images scaled and re-encoded for a vision model, and the text of
// documents (plain text, Markdown, CSV, JSON, source code, PDF). It does no
// I/O of its own: the core fetches the bytes through the adapter.
package media
