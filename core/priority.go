package core

import "context"

// A send is a reply unless marked otherwise. Scheduled messages are marked
// background, so that an adapter pacing its platform's rate limits lets a
// waiting user's reply go ahead of a burst of scheduled sends to others.
type backgroundKey struct{}

// WithBackground marks ctx as carrying a background send (a scheduled
// message): platform pacing serves replies first.
func WithBackground(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// IsBackground reports whether ctx carries a background send.
func IsBackground(ctx context.Context) bool {
	b, _ := ctx.Value(backgroundKey{}).(bool)
	return b
}
