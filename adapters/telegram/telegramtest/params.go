package telegramtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxBody bounds what the fake reads of one request: over the Bot API's
// 50 MB upload limit, so that a file a little over it reaches the limit
// check and gets Telegram's answer.
const maxBody = 64 << 20

// errTooLarge is a request over maxBody: Telegram's front answers such a
// request 413 before the Bot API reads it.
var errTooLarge = errors.New("request entity too large")

// paramsFault is Telegram's answer to a request readParams could not read.
func paramsFault(err error) Fault {
	if errors.Is(err, errTooLarge) {
		return Fault{Code: http.StatusRequestEntityTooLarge, Description: "Request Entity Too Large"}
	}
	return badRequest("can't parse request: " + err.Error())
}

// params are the parameters of one Bot API call, as strings the way they
// arrive in a form; JSON objects and arrays stay JSON text.
type params map[string]string

// readParams collects the query string and a multipart, JSON or urlencoded
// body. go-telegram/bot sends multipart, and an empty body when a method has
// no parameters.
func readParams(r *http.Request) (params, error) {
	p := params{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if len(body) > maxBody {
		return nil, errTooLarge
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return p, nil
	}
	ct, ctParams, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		form, err := multipart.NewReader(bytes.NewReader(body), ctParams["boundary"]).ReadForm(maxBody)
		if err != nil {
			return nil, fmt.Errorf("reading multipart form: %w", err)
		}
		defer func() { _ = form.RemoveAll() }()
		for k, v := range form.Value {
			p[k] = v[0]
		}
		for k, fh := range form.File {
			p[k] = "attach://" + k
			if err := p.keepUpload(k, fh[0]); err != nil {
				return nil, err
			}
		}
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("decoding json: %w", err)
		}
		for k, v := range m {
			var str string
			switch {
			case string(v) == "null":
				continue
			case json.Unmarshal(v, &str) == nil:
				p[k] = str
			default:
				p[k] = string(v)
			}
		}
	default:
		q, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("decoding form: %w", err)
		}
		for k, v := range q {
			p[k] = v[0]
		}
	}
	return p, nil
}

// int returns an integer parameter; ok is false when it is absent.
func (p params) int(name string) (n int64, ok bool, f *Fault) {
	v, present := p[name]
	if !present || v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		bad := badRequest("invalid " + name + " specified")
		return 0, false, &bad
	}
	return n, true, nil
}

// bool reads a boolean parameter the lenient way Telegram does.
func (p params) bool(name string) bool {
	switch strings.ToLower(strings.TrimSpace(p[name])) {
	case "true", "1", "yes":
		return true
	}
	return false
}
