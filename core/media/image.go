package media

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/webp"
)

// maxPixels refuses images whose header promises more than this many
// pixels before decoding them: a small file can declare a huge image
// (a decompression bomb) and take all the memory.
const maxPixels = 50_000_000

// jpegQuality is what a photo is re-encoded at: good enough for a model to
// read text in it, at a fraction of the bytes of PNG.
const jpegQuality = 85

// ErrNotImage is returned by Image for bytes that are not an image it can
// decode (JPEG, PNG, GIF, WebP), whatever the platform said they were.
var ErrNotImage = errors.New("not a JPEG, PNG, GIF or WebP image")

// Picture is an image ready for a vision model.
type Picture struct {
	// MIME is image/jpeg or image/png.
	MIME string
	// Data is the encoded image.
	Data []byte
	// Width and Height are its size after scaling.
	Width, Height int
}

// DataURL is the picture as a data: URL, as OpenAI's image_url parts take.
func (p Picture) DataURL() string {
	return "data:" + p.MIME + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
}

// Image decodes data (JPEG, PNG, GIF's first frame, WebP), scales it so its
// longest side is at most maxPx, and encodes it again: JPEG, or PNG when it
// has transparency. What a platform calls the file does not matter: the
// bytes say what it is.
func Image(data []byte, maxPx int) (Picture, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		if cfg, err = webp.DecodeConfig(bytes.NewReader(data)); err != nil {
			return Picture{}, ErrNotImage
		}
		format = "webp"
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return Picture{}, fmt.Errorf("image of %d×%d pixels: too large to open", cfg.Width, cfg.Height)
	}
	img, err := decode(format, data)
	if err != nil {
		return Picture{}, fmt.Errorf("decoding %s image: %w", format, err)
	}
	img = scale(img, maxPx)
	b := img.Bounds()
	var out bytes.Buffer
	out.Grow(b.Dx() * b.Dy() / 4)
	if opaque(img) {
		if err := jpeg.Encode(&out, img, &jpeg.Options{Quality: jpegQuality}); err != nil {
			return Picture{}, fmt.Errorf("encoding JPEG: %w", err)
		}
		return Picture{MIME: "image/jpeg", Data: out.Bytes(), Width: b.Dx(), Height: b.Dy()}, nil
	}
	if err := png.Encode(&out, img); err != nil {
		return Picture{}, fmt.Errorf("encoding PNG: %w", err)
	}
	return Picture{MIME: "image/png", Data: out.Bytes(), Width: b.Dx(), Height: b.Dy()}, nil
}

func decode(format string, data []byte) (image.Image, error) {
	r := bytes.NewReader(data)
	switch format {
	case "jpeg":
		return jpeg.Decode(r)
	case "png":
		return png.Decode(r)
	case "gif":
		return gif.Decode(r)
	case "webp":
		return webp.Decode(r)
	}
	return nil, ErrNotImage
}

// scale returns img with its longest side at most maxPx, keeping its
// aspect; img itself when it is small enough.
func scale(img image.Image, maxPx int) image.Image {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if maxPx <= 0 || (w <= maxPx && h <= maxPx) {
		return img
	}
	if w >= h {
		h, w = max(1, h*maxPx/w), maxPx
	} else {
		w, h = max(1, w*maxPx/h), maxPx
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	// Bilinear, not Catmull-Rom: a 12-megapixel photo scales in a fraction
	// of the time, and a model reads the result as well.
	xdraw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	return dst
}

// opaque reports whether img has no transparent pixel worth keeping.
func opaque(img image.Image) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok {
		return o.Opaque()
	}
	return false
}
