// Package adaptertest is the conformance suite every adapter passes, the way
// river's riverdrivertest or testing/fstest.TestFS work: an adapter's test
// builds a Rig, a fresh adapter wired to that platform's fake, and calls Run.
// Cases a platform cannot express (a terminal has no group chats) are skipped
// with the reason, never silently.
//
//	func TestConformance(t *testing.T) { // not parallel: Stop checks goroutines
//		adaptertest.Run(t, func(t *testing.T) *adaptertest.Rig {
//			fake := telegramtest.NewServer(t)
//			a := newAdapterFor(t, fake) // provisioned and validated
//			return &adaptertest.Rig{Adapter: a, DM: ..., ThreadOf: ..., Sent: ...}
//		})
//	}
//
// The cases, each a subtest on a fresh Rig: CapabilitiesSane; InboundDM and
// InboundDMTwoUsers (a DM reaches the core once, normalised); IgnoredGroup,
// IgnoredChannel, IgnoredOwn, IgnoredEdit (dropped, proven by a DM sent
// after it arriving alone); Reply and ReplyTwoUsers (a send reaches that
// chat only, with the platform's id); LongReply (split within
// MaxMessageLength runes, in order, nothing lost, a code block whole);
// RateLimitNextSend and RateLimitAfter (the wait honoured, each part
// delivered once); PermanentErrorBlocked and PermanentErrorUnknownThread
// (a prompt core.PermanentError); PlainTextAsWritten (core.FormatText
// reaches the platform as written, Markdown-like characters and all);
// RichText, RichTextReserved and LongRichText (core.FormatRichText shows
// styled, with no markup and no parse error, every reserved character as
// written, over the limit in parts that each keep their formatting, with
// nothing lost; skipped without Capabilities().RichText or without
// Sent.Shown); LongCodeBlock (a fenced code block over the limit shows as
// a code block with its language in every part, the code exact);
// RefusedMarkup and RefusedMarkupLater (a part the platform refuses as
// malformed markup arrives once as plain text, the parts around it
// formatted; skipped without Rig.RefuseNextMarkup or
// Rig.RefuseMarkupAfter); Image and
// ImageLongCaption (a core.ImageSender shows the image with its caption,
// and a caption too long to go with it whole after it; skipped for other
// adapters); SendFiles (a core.FileSender's picture, document and voice
// note arrive in order as the platform shows each kind, with their names,
// types and bytes, the text once as the first one's caption, one result
// id per message made; a FileSender whose Rig has no FilesSent fails);
// Tap (a tap on a sent question's button reaches
// Host.HandleTap with its data, message and user, and is acknowledged);
// UserEdit and UserDelete (reach Host.HandleChange with the platform id
// the DM had); UserReaction (added and taken back, reach
// Host.HandleReaction); BotReacts (core.Reactor's reaction shows on the
// fake, core.Unreactor takes it back); TypingConsistent and Typing; Stop
// (prompt, no goroutine left behind, a late Send returns). The cases of
// buttons, reactions and edits each run when the Rig has the hook that
// plays the user's side (Rig.Tap, EditDM, DeleteDM, React, BotReactions).
//
// Sends are checked by what reached the fake platform, through Rig.Sent;
// what a user sees of markup comes from Sent.Shown, which a rig reads with
// adapters/markup/markuptest the way its platform would. As
// delivery may be asynchronous, the suite ends each check by sending a
// sentinel message and waiting for it: what arrived before it is complete.
package adaptertest
