package view

// PathModel is an optional capability of a Codec whose format names the
// model in the request's path rather than in its body (Gemini's
// /v1beta/models/{model}:generateContent): the route hands it the path's
// model, and the codec it returns scans that model's requests
// (Request.Model) and is the request's codec from then on.
type PathModel interface {
	WithModel(model string) Codec
}

// PingPather is an optional capability of a Pinger whose format says in
// the path, not the body, whether an answer streams (Gemini's
// :streamGenerateContent?alt=sse): the path and query a ping of a request
// sent to path?rawQuery goes to, asking for an answer that does not
// stream.
type PingPather interface {
	PingPath(path, rawQuery string) (pingPath, pingQuery string)
}
