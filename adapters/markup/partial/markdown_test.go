package partial_test

import (
	"testing"

	"github.com/parleybot/parley/adapters/markup/partial"
)

func TestMarkdown(t *testing.T) {
	for _, c := range []struct{ md, want string }{
		{"", ""},
		{"Hello wor", "Hello wor"},
		{"Hello  \n", "Hello"},
		{"**bold te", "**bold te**"},
		{"**bold te ", "**bold te**"},
		{"**bold*", "**bold**"},
		{"**", ""},
		{"a **", "a"},
		{"*it and **bold", "*it and **bold***"},
		{"~~gone", "~~gone~~"},
		{"a ~~~x", "a ~~~x"},
		{"~~~x", ""}, // a fence opening
		{"snake_case and _it", "snake_case and _it_"},
		{"`code", "`code`"},
		{"**a `code", "**a `code`**"},
		{"`a` and ``b`", "`a` and"},
		{"[tex", ""},
		{"see [text](http://exa", "see"},
		{"see [text](http://example.com) and *x", "see [text](http://example.com) and *x*"},
		{"[text]", ""},
		{"[text] more", "[text] more"},
		{"![img](http://e.com/a.png", ""},
		{"a [b *c](http://e.com) d", "a [b *c](http://e.com) d"},
		{"```go\nfunc f() {\n\tx := `a`", "```go\nfunc f() {\n\tx := `a`"},
		{"```go\nfunc f()\n``", "```go\nfunc f()"},
		{"intro\n```py", "intro"},
		{"Title\n---", "Title"},
		{"a\n- ", "a"},
		{"a\n1.", "a"},
		{"> ", ""},
		{"> quoted **b", "> quoted **b**"},
		{"- item *x", "- item *x*"},
		{"x <https://exa", "x"},
		{"x <https://example.com> *y", "x <https://example.com> *y*"},
		{"AT&am", "AT"},
		{"back\\", "back"},
		{"|a|b|\n|-|", ""},
		{"2*3", "2*3*"},
		{"**bold** done", "**bold** done"},
		{"a\n\n**b**", "a\n\n**b**"},
	} {
		if got := partial.Markdown(c.md); got != c.want {
			t.Errorf("Markdown(%q) = %q, want %q", c.md, got, c.want)
		}
	}
}
