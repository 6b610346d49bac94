// Package controltokens is the control_tokens plugin: it tells the model
// about <SILENCE> and <WANT_MORE> (layer L1) and acts on the tokens the
// model writes. The reading itself (core/modeltext.ParseTokens, whose
// rules are in README.md) is the core's: the core strips the tokens from
// every answer even with this plugin disabled.
package controltokens
