// Package upload sends a reply's files to Telegram as it shows them:
// pictures with sendPhoto (scaled down to fit its 10 MB), documents with
// sendDocument, voice notes with sendVoice and audio with sendAudio, each
// a multipart upload; the reply's text is the first file's caption. The
// telegram adapter lends it its client and its paced, retried delivery.
package upload
