package llm

import (
	"net/url"

	"github.com/condense-proxy/condense-proxy/codec/chat"
	"github.com/condense-proxy/condense-proxy/codec/messages"
	"github.com/condense-proxy/condense-proxy/codec/responses"
	"github.com/condense-proxy/condense-proxy/view"
)

// codecOf returns the codec of a wire format, as the routes have it.
func codecOf(format string) view.Codec {
	switch format {
	case messages.Format:
		return messages.New(nil)
	case responses.Format:
		return responses.New(nil)
	}
	return chat.New(nil)
}

// client returns a client asking in the API of a wire format.
func client(u *url.URL, format string) *Client {
	return &Client{BaseURL: u, Codec: codecOf(format)}
}
