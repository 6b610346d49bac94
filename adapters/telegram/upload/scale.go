package upload

import (
	"bytes"
	"image"
	"image/jpeg"
	"path/filepath"
	"strings"

	_ "image/gif" // pictures a photo may be
	_ "image/png"

	"golang.org/x/image/draw"
)

// maxPixels bounds the pictures decoded to be scaled: a small file may
// claim a vast size (a PNG of one colour), and decoding it would take
// that much memory. A bigger one goes as a document.
const maxPixels = 64 << 20

// maxSide is the longest side of a scaled photo: Telegram shows none
// larger (it keeps 2560 px at most).
const maxSide = 2560

// fitPhoto returns a picture as sendPhoto takes it: as it is when it is
// within 10 MB, 10000 px width and height together and a 1:20 ratio;
// scaled down and encoded as JPEG (name ending .jpg) when it is too big;
// ok false when it cannot be a photo (a format Go cannot read, a ratio
// over 20), so that it goes as a document.
func fitPhoto(data []byte, name string) ([]byte, string, bool) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width == 0 || cfg.Height == 0 {
		return nil, "", false
	}
	w, h := cfg.Width, cfg.Height
	if w > 20*h || h > 20*w {
		return nil, "", false
	}
	if len(data) <= MaxPhoto && w+h <= 10000 {
		return data, name, true
	}
	if w*h > maxPixels {
		return nil, "", false
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", false
	}
	side := min(max(w, h), maxSide)
	for side >= 16 {
		out, err := scaleJPEG(img, side)
		if err != nil {
			return nil, "", false
		}
		if len(out) <= MaxPhoto {
			return out, strings.TrimSuffix(name, filepath.Ext(name)) + ".jpg", true
		}
		side = side * 7 / 10
	}
	return nil, "", false
}

// scaleJPEG draws img with its longest side side pixels and encodes it as
// JPEG.
func scaleJPEG(img image.Image, side int) ([]byte, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w >= h {
		w, h = side, max(1, h*side/w)
	} else {
		w, h = max(1, w*side/h), side
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	// JPEG has no transparency: what was transparent shows white.
	draw.Draw(dst, dst.Bounds(), image.White, image.Point{}, draw.Src)
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, b, draw.Over, nil)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 85}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
