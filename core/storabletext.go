package core

// StorableText is s as every store can keep it: NUL and invalid UTF-8
// become U+FFFD, as in inbound messages. Text from outside that goes to
// the store by another path (the HTTP API) is cleaned with it too.
func StorableText(s string) string { return storableText(s) }
