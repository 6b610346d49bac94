package llmtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/parleybot/parley/core/llm/internal/ogg"
)

// SpeechRequest is one POST /audio/speech the server received.
type SpeechRequest struct {
	Model          string  `json:"model"`
	Input          string  `json:"input"`
	Voice          string  `json:"voice"`
	ResponseFormat string  `json:"response_format"` // "": OpenAI's default, mp3
	Instructions   string  `json:"instructions"`
	Speed          float64 `json:"speed"`
	// Authorization is the Authorization header as sent.
	Authorization string `json:"-"`
}

// maxSpeechInput is OpenAI's bound on the text to say, in characters.
const maxSpeechInput = 4096

// handleSpeech answers POST /audio/speech as OpenAI does, in Ogg Opus only.
func handleSpeech(s *Server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req SpeechRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, "llmtest: decoding request: "+err.Error(), "")
			return
		}
		req.Authorization = r.Header.Get("Authorization")
		if !s.authorized(w, req.Authorization) {
			s.Speech.record(req)
			return
		}
		if msg, param := refusedSpeech(req); msg != "" {
			s.Speech.record(req)
			writeAPIError(w, http.StatusBadRequest, apiError{Message: msg, Type: "invalid_request_error", Param: param})
			return
		}
		resp := s.Speech.take(req)
		if !answerMedia(s, w, r, resp) {
			return
		}
		body, contentType := resp.body, resp.contentType
		if !resp.own {
			body, contentType = OggOpus(req.Input), "audio/opus" // what OpenAI sends for opus
		}
		w.Header().Set("Content-Type", contentType)
		writeMedia(s, w, r, resp, body)
	}
}

// refusedSpeech is the message and parameter of OpenAI's 400 for a
// request it would refuse, or "". The fake makes only Ogg Opus: asked for
// another format (mp3 is the default) it refuses too, where OpenAI would
// answer in that format.
func refusedSpeech(req SpeechRequest) (msg, param string) {
	switch {
	case req.Model == "":
		return "you must provide a model parameter", "model"
	case req.Input == "":
		return "Missing required parameter: 'input'.", "input"
	case req.Voice == "":
		return "Missing required parameter: 'voice'.", "voice"
	case utf8.RuneCountInString(req.Input) > maxSpeechInput:
		return fmt.Sprintf("Invalid 'input': string too long. Expected a string with maximum length %d, but got a string with length %d instead.",
			maxSpeechInput, utf8.RuneCountInString(req.Input)), "input"
	case req.ResponseFormat != "opus":
		return fmt.Sprintf("llmtest: the fake speaks only opus, not response_format %q", req.ResponseFormat), "response_format"
	}
	return "", ""
}

// The Ogg Opus stream the fake makes.
const (
	oggSerial    = 0x11c0ffee
	opusPreSkip  = 312 // samples at 48 kHz, as libopus's encoder
	frameSamples = 960 // 20 ms at 48 kHz
	framesAPage  = 50  // a second of audio a page
	inputTag     = "LLMTEST_INPUT="
)

// silence is an Opus packet (RFC 6716): TOC 0xf8 (CELT-only, fullband,
// 20 ms, mono, one frame) and the two bytes of a silent CELT frame.
var silence = []byte{0xf8, 0xff, 0xfe}

// OggOpus is the speech the fake makes for input: a valid Ogg Opus stream
// (RFC 7845) of mono silence, 20 ms a character of input, whose OpusTags
// header carries the input as the comment LLMTEST_INPUT=<input> (vendor
// "llmtest"), so tests can tell voice notes apart (SpokenInput). Its pages
// are: OpusHead (beginning the stream), OpusTags, then the audio, 50
// packets a page, the last page ending the stream.
func OggOpus(input string) []byte {
	return oggOpus(input, max(utf8.RuneCountInString(input), 1), silence)
}

// OggOpusOfSize is a valid Ogg Opus stream of about n bytes (at least n),
// its frames 60-byte packets, as a 24 kbit/s voice is: a voice note as
// large as a test needs, for measuring what sending one costs. Its
// OpusTags carry input as OggOpus's do.
func OggOpusOfSize(input string, n int) []byte {
	packet := make([]byte, 60)
	packet[0] = 0xf8 // CELT-only, fullband, 20 ms, mono, one frame
	for i := 1; i < len(packet); i++ {
		packet[i] = byte(i * 37)
	}
	// A page of 50 packets is 3,000 bytes of audio and 77 of header.
	frames := max(n/3077*framesAPage+framesAPage, 1)
	return oggOpus(input, frames, packet)
}

// oggOpus is the stream of input's tags and frames copies of packet.
func oggOpus(input string, frames int, packet []byte) []byte {
	head := []byte("OpusHead\x01\x01")
	head = binary.LittleEndian.AppendUint16(head, opusPreSkip)
	head = binary.LittleEndian.AppendUint32(head, 48000)
	head = append(head, 0, 0, 0) // output gain 0, channel mapping family 0
	tags := []byte("OpusTags")
	tags = binary.LittleEndian.AppendUint32(tags, uint32(len("llmtest")))
	tags = append(tags, "llmtest"...)
	tags = binary.LittleEndian.AppendUint32(tags, 1)
	tags = binary.LittleEndian.AppendUint32(tags, uint32(len(inputTag)+len(input)))
	tags = append(append(tags, inputTag...), input...)

	pages := []ogg.Page{{HeaderType: ogg.BOS, Packets: [][]byte{head}}, {Packets: [][]byte{tags}}}
	for done := 0; done < frames; {
		n := min(framesAPage, frames-done)
		p := ogg.Page{Packets: make([][]byte, n)}
		for i := range p.Packets {
			p.Packets[i] = packet
		}
		done += n
		p.Granule = int64(done * frameSamples)
		if done == frames {
			p.HeaderType = ogg.EOS
		}
		pages = append(pages, p)
	}
	var out []byte
	for i, p := range pages {
		p.Serial, p.Seq = oggSerial, uint32(i)
		b, err := p.Encode()
		if err != nil {
			panic("llmtest: " + err.Error()) // a 4,096-character input fits a page
		}
		out = append(out, b...)
	}
	return out
}

// SpokenInput reads back the input a stream made by OggOpus says, checking
// that it is a whole Ogg Opus stream.
func SpokenInput(stream []byte) (string, error) {
	if err := ogg.CheckOpus(stream); err != nil {
		return "", err
	}
	pages, _ := ogg.Parse(stream)
	tags := pages[1].Packets[0]
	if i := bytes.Index(tags, []byte(inputTag)); i >= 0 {
		return string(tags[i+len(inputTag):]), nil
	}
	return "", errors.New("llmtest: no " + strings.TrimSuffix(inputTag, "=") + " comment: not made by OggOpus")
}
