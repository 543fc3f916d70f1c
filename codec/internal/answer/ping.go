package answer

import (
	"bytes"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/condense-proxy/condense-proxy/view"
)

// Ping is view.Pinger's Ping for a body whose answer is bound by the
// field named bound: body with bound set to limit, "stream" false where
// it is set, "stream_options" dropped; every other byte stays. thinks:
// the format may carry Anthropic's thinking settings (Messages, and chat
// through LiteLLM), whose budget the bound must exceed. out is the
// bound set.
func Ping(body []byte, bound string, limit int, thinks bool) (ping []byte, out int, err error) {
	if !gjson.ValidBytes(body) || !gjson.GetBytes(body, "@this").IsObject() {
		return nil, 0, view.ErrNoPing
	}
	if thinks {
		switch th := gjson.GetBytes(body, "thinking"); {
		case !th.IsObject() || th.Get("type").String() == "disabled":
		case th.Get("type").String() == "enabled":
			budget := int(th.Get("budget_tokens").Int())
			if budget <= 0 {
				return nil, 0, view.ErrNoPing
			}
			limit = budget + 1
		default:
			// Adaptive or unknown thinking: its bound is not ours to
			// judge; the ping keeps it and is priced at it.
			cur := gjson.GetBytes(body, bound)
			if cur.Type != gjson.Number || cur.Int() < 1 {
				return nil, 0, view.ErrNoPing
			}
			limit = int(cur.Int())
		}
	}
	ping = bytes.Clone(body)
	if ping, err = sjson.SetBytes(ping, bound, limit); err != nil {
		return nil, 0, fmt.Errorf("setting %s: %w", bound, err)
	}
	if gjson.GetBytes(ping, "stream").Exists() {
		if ping, err = sjson.SetBytes(ping, "stream", false); err != nil {
			return nil, 0, fmt.Errorf("setting stream: %w", err)
		}
	}
	if gjson.GetBytes(ping, "stream_options").Exists() {
		if ping, err = sjson.DeleteBytes(ping, "stream_options"); err != nil {
			return nil, 0, fmt.Errorf("dropping stream_options: %w", err)
		}
	}
	return ping, limit, nil
}
