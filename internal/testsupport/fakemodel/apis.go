package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropicWriter speaks the Messages API: SSE message_start,
// content_block_start/delta/stop, message_delta, message_stop.
type anthropicWriter struct{}

func (anthropicWriter) streaming(r Request) bool { return r.Stream }

func (anthropicWriter) error(w http.ResponseWriter, status int, message string) {
	typ := map[int]string{
		400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error",
	}[status]
	if typ == "" {
		typ = "api_error"
	}
	w.Header().Set("Request-Id", "req_fake")
	writeJSON(w, status, map[string]any{
		"type": "error", "error": map[string]any{"type": typ, "message": message}, "request_id": "req_fake",
	})
}

func (anthropicWriter) ids(r Request) (msg, tool string) {
	return fmt.Sprintf("msg_fake%04d", r.Seq), fmt.Sprintf("toolu_fake%04d", r.Seq)
}

func (anthropicWriter) usage(r Request, output int) map[string]any {
	return map[string]any{
		"input_tokens": tokens(len(r.Body)), "output_tokens": output,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
	}
}

func (a anthropicWriter) stop(rep Reply) string {
	if rep.Call != nil {
		return "tool_use"
	}
	return "end_turn"
}

func (a anthropicWriter) events(r Request, rep Reply) []event {
	msgID, toolID := a.ids(r)
	out := tokens(len(rep.Text))
	evs := []event{{name: "message_start", data: map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": r.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": a.usage(r, 1),
	}}}}
	if rep.Call != nil {
		out = tokens(len(rep.Call.argsJSON()))
		evs = append(evs,
			event{name: "content_block_start", data: map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "tool_use", "id": toolID, "name": rep.Call.Name, "input": map[string]any{}}}},
			event{name: "content_block_delta", hangAfter: true, data: map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": rep.Call.argsJSON()}}},
			event{name: "content_block_stop", data: map[string]any{"type": "content_block_stop", "index": 0}},
		)
	} else {
		evs = append(evs, event{name: "content_block_start", data: map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}})
		for i, c := range chunks(rep.Text) {
			evs = append(evs, event{name: "content_block_delta", hangAfter: i == 0, data: map[string]any{
				"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": c}}})
		}
		evs = append(evs, event{name: "content_block_stop", data: map[string]any{"type": "content_block_stop", "index": 0}})
	}
	evs = append(evs,
		event{name: "message_delta", data: map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": a.stop(rep), "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": out}}},
		event{name: "message_stop", data: map[string]any{"type": "message_stop"}},
	)
	markHang(evs)
	return evs
}

func (a anthropicWriter) json(r Request, rep Reply) any {
	msgID, toolID := a.ids(r)
	content := []any{map[string]any{"type": "text", "text": rep.Text}}
	if rep.Call != nil {
		content = []any{map[string]any{"type": "tool_use", "id": toolID, "name": rep.Call.Name, "input": rep.Call.Args}}
	}
	return map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": r.Model, "content": content,
		"stop_reason": a.stop(rep), "stop_sequence": nil, "usage": a.usage(r, tokens(len(rep.Text))),
	}
}

// openaiWriter speaks the Responses API: SSE response.created,
// response.output_item.added, deltas, response.output_item.done,
// response.completed.
type openaiWriter struct{}

func (openaiWriter) streaming(r Request) bool { return r.Stream }

func (openaiWriter) error(w http.ResponseWriter, status int, message string) {
	typ, code := "server_error", any(nil)
	switch status {
	case 400, 404:
		typ = "invalid_request_error"
	case 401:
		typ, code = "invalid_request_error", "invalid_api_key"
	case 429:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": code,
	}})
}

// item returns the output item for rep, in its final (done) form.
func (openaiWriter) item(r Request, rep Reply) map[string]any {
	if rep.Call != nil && rep.Call.Search {
		return map[string]any{
			"type": "tool_search_call", "id": fmt.Sprintf("tsc_fake%04d", r.Seq), "status": "completed",
			"call_id": fmt.Sprintf("call_fake%04d", r.Seq), "execution": "client", "arguments": rep.Call.Args,
		}
	}
	if rep.Call != nil {
		item := map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_fake%04d", r.Seq), "status": "completed",
			"call_id": fmt.Sprintf("call_fake%04d", r.Seq), "name": rep.Call.Name, "arguments": rep.Call.argsJSON(),
		}
		if rep.Call.Namespace != "" {
			item["namespace"] = rep.Call.Namespace
		}
		return item
	}
	return map[string]any{
		"type": "message", "id": fmt.Sprintf("msg_fake%04d", r.Seq), "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}},
	}
}

func (o openaiWriter) response(r Request, rep Reply, status string, output []any) map[string]any {
	resp := map[string]any{
		"id": fmt.Sprintf("resp_fake%04d", r.Seq), "object": "response", "created_at": 1700000000,
		"status": status, "model": r.Model, "output": output,
	}
	if status == "completed" {
		in, out := tokens(len(r.Body)), tokens(len(rep.Text))
		resp["usage"] = map[string]any{
			"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": in + out,
		}
	}
	return resp
}

func (o openaiWriter) events(r Request, rep Reply) []event {
	seq := 0
	ev := func(name string, fields map[string]any) event {
		fields["type"] = name
		fields["sequence_number"] = seq
		seq++
		return event{name: name, data: fields}
	}
	done := o.item(r, rep)
	id := done["id"]
	evs := []event{ev("response.created", map[string]any{"response": o.response(r, rep, "in_progress", []any{})})}
	if rep.Call != nil && rep.Call.Search {
		evs = append(evs, ev("response.output_item.added", map[string]any{"output_index": 0, "item": done}))
		evs[len(evs)-1].hangAfter = true
	} else if rep.Call != nil {
		added := map[string]any{}
		for k, v := range done {
			added[k] = v
		}
		added["arguments"], added["status"] = "", "in_progress"
		evs = append(evs,
			ev("response.output_item.added", map[string]any{"output_index": 0, "item": added}),
			ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": 0, "delta": done["arguments"]}),
			ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": 0, "arguments": done["arguments"]}),
		)
		evs[len(evs)-2].hangAfter = true
	} else {
		evs = append(evs,
			ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
				"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}}}),
			ev("response.content_part.added", map[string]any{"item_id": id, "output_index": 0, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}),
		)
		for i, c := range chunks(rep.Text) {
			e := ev("response.output_text.delta", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "delta": c})
			e.hangAfter = i == 0
			evs = append(evs, e)
		}
		evs = append(evs,
			ev("response.output_text.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "text": rep.Text}),
			ev("response.content_part.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}}),
		)
	}
	evs = append(evs,
		ev("response.output_item.done", map[string]any{"output_index": 0, "item": done}),
		ev("response.completed", map[string]any{"response": o.response(r, rep, "completed", []any{done})}),
	)
	markHang(evs)
	return evs
}

func (o openaiWriter) json(r Request, rep Reply) any {
	return o.response(r, rep, "completed", []any{o.item(r, rep)})
}

// geminiWriter speaks generateContent and streamGenerateContent?alt=sse:
// each event a GenerateContentResponse, the last with finishReason STOP.
type geminiWriter struct{ stream bool }

func (g geminiWriter) streaming(Request) bool { return g.stream }

func (geminiWriter) error(w http.ResponseWriter, status int, message string) {
	st := map[int]string{
		400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 501: "NOT_IMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
	}[status]
	if st == "" {
		st = "INTERNAL"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": message, "status": st}})
}

func (geminiWriter) chunk(r Request, parts []any, finish bool, output int) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish {
		cand["finishReason"] = "STOP"
	}
	in := tokens(len(r.Body))
	return map[string]any{
		"candidates": []any{cand},
		"usageMetadata": map[string]any{
			"promptTokenCount": in, "candidatesTokenCount": output, "totalTokenCount": in + output,
		},
		"modelVersion": r.Model,
		"responseId":   fmt.Sprintf("resp_fake%04d", r.Seq),
	}
}

func (g geminiWriter) events(r Request, rep Reply) []event {
	if rep.Call != nil {
		args := json.RawMessage(rep.Call.argsJSON())
		part := map[string]any{"functionCall": map[string]any{"name": rep.Call.Name, "args": args}}
		return []event{{hangAfter: true, data: g.chunk(r, []any{part}, true, tokens(len(args)))}}
	}
	cs := chunks(rep.Text)
	if len(cs) == 0 {
		cs = []string{""}
	}
	var evs []event
	for i, c := range cs {
		last := i == len(cs)-1
		out := 0
		if last {
			out = tokens(len(rep.Text))
		}
		evs = append(evs, event{hangAfter: i == 0, data: g.chunk(r, []any{map[string]any{"text": c}}, last, out)})
	}
	if rep.Hang {
		// The first chunk must not be the last: a hung stream never ends.
		evs[0].data = g.chunk(r, []any{map[string]any{"text": cs[0]}}, false, 0)
	}
	return evs
}

func (g geminiWriter) json(r Request, rep Reply) any {
	if rep.Call != nil {
		part := map[string]any{"functionCall": map[string]any{"name": rep.Call.Name, "args": rep.Call.Args}}
		return g.chunk(r, []any{part}, true, tokens(len(rep.Call.argsJSON())))
	}
	return g.chunk(r, []any{map[string]any{"text": rep.Text}}, true, tokens(len(rep.Text)))
}

// markHang makes sure a Hang stops somewhere: at the first event that is
// marked, else after the first event.
func markHang(evs []event) {
	for _, e := range evs {
		if e.hangAfter {
			return
		}
	}
	if len(evs) > 0 {
		evs[0].hangAfter = true
	}
}
