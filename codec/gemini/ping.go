package gemini

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/view"
)

var (
	_ view.Pinger     = (*Codec)(nil)
	_ view.PingPather = (*Codec)(nil)
)

// Ping implements view.Pinger: generationConfig.maxOutputTokens 1 (a
// thinking model may then answer nothing: its prompt is read all the
// same); what the provider caches — the system instruction, the tools,
// the contents — stays byte for byte. Not streamed: the path says so
// (PingPath).
func (*Codec) Ping(body []byte, _ bool) ([]byte, int, error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() || !gjson.GetBytes(body, "contents").IsArray() {
		return nil, 0, view.ErrNoPing
	}
	key := "generationConfig"
	if g := gjson.ParseBytes(body); !g.Get(key).Exists() && g.Get("generation_config").Exists() {
		key = "generation_config"
	}
	gc := gjson.GetBytes(body, key)
	if gc.Exists() && !gc.IsObject() {
		return nil, 0, view.ErrNoPing
	}
	ping := bytes.Clone(body)
	var err error
	bound := "maxOutputTokens"
	if gc.Get("max_output_tokens").Exists() && !gc.Get(bound).Exists() {
		bound = "max_output_tokens"
	}
	if ping, err = sjson.SetBytes(ping, key+"."+bound, 1); err != nil {
		return nil, 0, fmt.Errorf("setting maxOutputTokens: %w", err)
	}
	return ping, 1, nil
}

// PingPath implements view.PingPather: a request to
// …:streamGenerateContent is pinged at …:generateContent, its alt=sse
// dropped from the query (the key, if any, stays).
func (*Codec) PingPath(path, rawQuery string) (string, string) {
	if p, ok := strings.CutSuffix(path, ":streamGenerateContent"); ok {
		path = p + ":generateContent"
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil || !q.Has("alt") {
		return path, rawQuery
	}
	q.Del("alt")
	return path, q.Encode()
}
