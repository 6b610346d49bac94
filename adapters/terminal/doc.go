// Package terminal is Parley's terminal chat (`parley chat`): each line
// typed on In is a direct message from one local user, and the bot's
// replies are printed to Out as "<bot name>: <text>" followed by a fresh
// "> " prompt. The adapter is named "terminal" (config section
// adapters.terminal).
//
// The whole terminal is one conversation on the "console" platform, with
// channel_thread_id and channel_user_id "console:<user>": the platform id
// and the thread ids keep the adapter's former name, so conversations
// stored before the rename carry on. Done reports the end of input so the
// host can wait for the last reply before stopping.
//
// Reading cannot be interrupted in general (a blocked read of os.Stdin only
// ends when a line arrives or the stream closes), so Stop does not wait for
// a read in progress: it stops handing lines to the core at once, and the
// reading goroutine exits when its read returns. Tests read from an io.Pipe
// they close.
//
// "/file PATH [text]" sends a file with the text (attach.go); it is read
// from where it lies when a turn opens it.
//
// A reply prints as the model writes it (Stream), its new words added to
// its line, unless adapters.terminal.streaming is off.
//
// The terminal shows no typing indicator: it does not implement
// core.TypingIndicator and reports Capabilities.Typing false.
package terminal
