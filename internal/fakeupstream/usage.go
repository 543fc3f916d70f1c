package fakeupstream

// Usage is what a fake's answer reports of its prompt, as each provider
// reports it: Anthropic's input_tokens (the uncached rest),
// cache_read_input_tokens, cache_creation_input_tokens and its
// cache_creation 5-minute/1-hour split; chat's prompt_tokens with
// prompt_tokens_details.cached_tokens (and cache_write_tokens);
// Responses' input_tokens with input_tokens_details.cached_tokens (and
// cache_write_tokens).
type Usage struct {
	// Prompt is the prompt's tokens in all; 0: the fake's own count
	// (the chat fake's is 1).
	Prompt int
	// CacheRead and CacheWrite are the prompt's tokens read from and
	// written to the prompt cache (within Prompt); CacheWrite1h is the
	// share of CacheWrite written for an hour (Messages only).
	CacheRead, CacheWrite, CacheWrite1h int
}

// usageOf is what f says of body's prompt, counted tokens by the fake;
// ok is false when f is nil (the fake's default usage).
func usageOf(f func(body []byte) Usage, body []byte, tokens int) (u Usage, ok bool) {
	if f == nil {
		return Usage{Prompt: tokens}, false
	}
	u = f(body)
	if u.Prompt <= 0 {
		u.Prompt = tokens
	}
	return u, true
}

// anthropic is the usage object of a Messages answer.
func (u Usage) anthropic(output int) map[string]any {
	return map[string]any{"input_tokens": max(u.Prompt-u.CacheRead-u.CacheWrite, 0), "cache_read_input_tokens": u.CacheRead,
		"cache_creation_input_tokens": u.CacheWrite, "output_tokens": output,
		"cache_creation": map[string]any{"ephemeral_5m_input_tokens": u.CacheWrite - u.CacheWrite1h, "ephemeral_1h_input_tokens": u.CacheWrite1h}}
}

// details is chat's prompt_tokens_details or Responses'
// input_tokens_details.
func (u Usage) details() map[string]any {
	d := map[string]any{"cached_tokens": u.CacheRead}
	if u.CacheWrite > 0 {
		d["cache_write_tokens"] = u.CacheWrite
	}
	return d
}
