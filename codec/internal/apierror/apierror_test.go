package apierror

import (
	"encoding/json"
	"testing"
)

func TestOpenAI(t *testing.T) {
	var v struct {
		Error struct {
			Message, Type string
			Param, Code   any
		}
	}
	if err := json.Unmarshal(OpenAI("invalid_request_error", `bad "x"`), &v); err != nil {
		t.Fatal(err)
	}
	if v.Error.Type != "invalid_request_error" || v.Error.Message != `bad "x"` || v.Error.Param != nil || v.Error.Code != nil {
		t.Errorf("%+v", v)
	}
}
