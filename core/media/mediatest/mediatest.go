// Package mediatest makes the files tests send as users: photos of a given
// size and one-page PDFs with a given text.
package mediatest

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
)

// Photo is a w×h JPEG of quality q (1–100). With noise the pixels vary
// like a camera's, so the file is as large as a real photo of that size
// (4000×3000 at 95 is about 4 MB); without, it is a smooth gradient.
func Photo(w, h, q int, noise bool) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	seed := uint32(2463534242)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{R: uint8(x), G: uint8(y), B: 128, A: 255}
			if noise {
				// xorshift: fast, deterministic, no global state.
				seed ^= seed << 13
				seed ^= seed >> 17
				seed ^= seed << 5
				c.R, c.G, c.B = uint8(seed), uint8(seed>>8), uint8(seed>>16)
			}
			img.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: q}); err != nil {
		panic(err) // encoding to memory does not fail
	}
	return b.Bytes()
}

// PDF is a one-page PDF showing text (ASCII, no parentheses) in Helvetica.
func PDF(text string) []byte {
	content := fmt.Sprintf("BT /F1 24 Tf 72 720 Td (%s) Tj ET", text)
	objects := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}
