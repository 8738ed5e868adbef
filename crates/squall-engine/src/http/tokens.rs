//! The tokens of a language model's streamed answer: which Server-Sent Events of a stream carry
//! generated output, and how many tokens the server says it generated, so that the engine can time
//! the first token, the gaps between tokens and tokens a second (`stats::streams`) as LLM-serving
//! benchmarks do (vLLM's benchmark_serving, LLMPerf).
//!
//! An event is read only when its data is a JSON object (it starts with `{`); the three streaming
//! formats the serving APIs use, as their references define them:
//! - OpenAI Chat Completions and Completions (vLLM, SGLang, TGI, llama.cpp, Ollama's and most servers'
//!   OpenAI-compatible endpoints): a chunk carries output when one of its `choices` has a non-empty
//!   `delta.content`, `delta.reasoning_content`, `delta.reasoning`, `delta.refusal` or
//!   `delta.tool_calls`, or (Completions) a non-empty `text`; the count is `usage.completion_tokens`
//!   of the chunk that has it (with `stream_options: {"include_usage": true}`, the last before
//!   `[DONE]`);
//! - OpenAI Responses: an event whose `type` is one of the output deltas (`response.output_text.delta`,
//!   `response.reasoning_text.delta`, `response.reasoning_summary_text.delta`, `response.refusal.delta`,
//!   `response.function_call_arguments.delta`) with a non-empty `delta`; the count is
//!   `response.usage.output_tokens` (in `response.completed`);
//! - Anthropic Messages: a `content_block_delta` whose `delta` has a non-empty `text`, `thinking` or
//!   `partial_json`; the count is `usage.output_tokens` (cumulative: the last `message_delta`'s).
//!
//! Anything else (`[DONE]`, a role-only first chunk, other JSON, text) carries no token. The cost is a
//! JSON parse of each event that starts with `{` into a `serde_json::Value` (measured in a release
//! build on this project's host: 1.6 µs for a 149-byte OpenAI chat chunk of six fields, 0.8 µs for a
//! 316-byte one of three), and nothing for others.

pub use crate::stats::Tokens;
use serde_json::Value;

/// Reads one event's data into `t`.
pub fn read(t: &mut Tokens, data: &[u8]) {
    let Some(first) = data.iter().find(|b| !b.is_ascii_whitespace()) else { return };
    if *first != b'{' {
        return;
    }
    let Ok(Value::Object(chunk)) = serde_json::from_slice::<Value>(data) else { return };
    let (output, usage) = read_chunk(&chunk);
    t.chunks += output as u64;
    if usage.is_some() {
        t.usage = usage;
    }
}

type Object = serde_json::Map<String, Value>;

fn text(v: Option<&Value>) -> bool {
    match v {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    }
}

const RESPONSES_DELTAS: [&str; 5] = [
    "response.output_text.delta",
    "response.reasoning_text.delta",
    "response.reasoning_summary_text.delta",
    "response.refusal.delta",
    "response.function_call_arguments.delta",
];

/// Whether a chunk carries output, and the output tokens its usage gives.
fn read_chunk(chunk: &Object) -> (bool, Option<u64>) {
    let usage_of = |v: Option<&Value>| {
        let u = v?.as_object()?;
        u.get("completion_tokens").or_else(|| u.get("output_tokens"))?.as_u64()
    };
    if let Some(Value::Array(choices)) = chunk.get("choices") {
        let output = choices.iter().filter_map(Value::as_object).any(|c| {
            text(c.get("text"))
                || c.get("delta").and_then(Value::as_object).is_some_and(|d| {
                    ["content", "reasoning_content", "reasoning", "refusal", "tool_calls"]
                        .iter()
                        .any(|k| text(d.get(*k)))
                })
        });
        return (output, usage_of(chunk.get("usage")));
    }
    match chunk.get("type").and_then(Value::as_str) {
        Some(t) if RESPONSES_DELTAS.contains(&t) => (text(chunk.get("delta")), None),
        Some("response.completed" | "response.incomplete") => {
            (false, usage_of(chunk.get("response").and_then(|r| r.get("usage"))))
        }
        Some("content_block_delta") => {
            let d = chunk.get("delta").and_then(Value::as_object);
            (d.is_some_and(|d| ["text", "thinking", "partial_json"].iter().any(|k| text(d.get(*k)))), None)
        }
        Some("message_start") => (false, usage_of(chunk.get("message").and_then(|m| m.get("usage")))),
        Some(_) => (false, usage_of(chunk.get("usage"))),
        None => (false, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(events: &[&str]) -> Tokens {
        let mut t = Tokens::default();
        for e in events {
            super::read(&mut t, e.as_bytes());
        }
        t
    }

    #[test]
    fn openai_chat_chunks_carry_tokens_when_their_delta_has_output() {
        let role = r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
        let tok =
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"Hel\"lo"},"finish_reason":null}],"usage":null}"#;
        let reasoning = r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#;
        let tool = r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]}}]}"#;
        let stop = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}"#;
        assert_eq!(read_all(&[role, tok, reasoning, tool, stop, "[DONE]"]), Tokens { chunks: 3, usage: None });
        assert_eq!(read_all(&[role, tok, tok, stop, usage, "[DONE]"]), Tokens { chunks: 2, usage: Some(12) });
    }

    #[test]
    fn completions_responses_and_anthropic_streams_are_read() {
        let completion = r#"{"object":"text_completion","choices":[{"index":0,"text":" a","finish_reason":null}]}"#;
        assert_eq!(read_all(&[completion, completion, r#"{"choices":[{"text":""}]}"#]).chunks, 2);
        let delta = r#"{"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"Hi"}"#;
        let done =
            r#"{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":5,"output_tokens":7}}}"#;
        let other = r#"{"type":"response.output_text.done","text":"Hi there"}"#;
        assert_eq!(read_all(&[delta, delta, other, done]), Tokens { chunks: 2, usage: Some(7) });
        let start = r#"{"type":"message_start","message":{"usage":{"input_tokens":25,"output_tokens":1}}}"#;
        let text = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#;
        let end = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}"#;
        assert_eq!(read_all(&[start, text, text, text, end]), Tokens { chunks: 3, usage: Some(15) });
    }

    #[test]
    fn anything_else_carries_no_token() {
        for data in ["[DONE]", "event 1", "", "  ", "{", "{\"a\":1}", "[1,2]", "{\"choices\":\"x\"}", "{\"type\":7}"] {
            assert_eq!(read_all(&[data]), Tokens::default(), "{data:?}");
        }
    }
}
