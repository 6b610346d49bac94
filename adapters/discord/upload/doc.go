// Package upload sends a message's files to Discord as attachments, for
// the Discord adapter's core.FileSender: multipart message creates
// (payload_json and files[n]) of at most 10 files and 10 MiB each, a voice
// note as Discord's voice message (flag IS_VOICE_MESSAGE with the
// attachment's duration_secs and waveform, read from the Ogg Opus data),
// pictures over the limit scaled down, and the caption as the first
// message's content or, when it cannot be, as text after the files.
//
// The package builds and orders the requests; the adapter posts them (its
// rate limits, pacing and retries) and sends text as Send does.
package upload
