// Folds /v1/chat/completions stream chunks into one assistant message:
// content and reasoning_content deltas append, tool calls are assembled by
// index (name once, arguments in pieces), and the last chunks bring the
// finish reason, the server's timings and the usage.

export function emptyReply() {
  return { role: 'assistant', content: '', reasoning: '', toolCalls: [], finishReason: null, timings: null, usage: null };
}

// Applies one parsed chunk to reply (mutated and returned). An error object
// in the stream (the server's error shape) throws.
export function applyChunk(reply, chunk) {
  if (chunk.error) {
    const e = new Error(chunk.error.message || 'the server reported an error');
    e.serverError = chunk.error;
    throw e;
  }
  if (chunk.timings) reply.timings = chunk.timings;
  if (chunk.usage) reply.usage = chunk.usage;
  for (const choice of chunk.choices || []) {
    const d = choice.delta || {};
    if (typeof d.content === 'string') reply.content += d.content;
    if (typeof d.reasoning_content === 'string') reply.reasoning += d.reasoning_content;
    for (const tc of d.tool_calls || []) {
      const i = Number.isInteger(tc.index) ? tc.index : reply.toolCalls.length;
      const call = (reply.toolCalls[i] ||= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (tc.id) call.id = tc.id;
      if (tc.type) call.type = tc.type;
      if (tc.function?.name) call.function.name = tc.function.name;
      if (tc.function?.arguments) call.function.arguments += tc.function.arguments;
    }
    if (choice.finish_reason) reply.finishReason = choice.finish_reason;
  }
  return reply;
}

// One SSE event's data: "[DONE]" ends the stream (returns false).
export function applyEventData(reply, data) {
  if (data.trim() === '[DONE]') return false;
  applyChunk(reply, JSON.parse(data));
  return true;
}

// Tokens the conversation occupies in the slot after this reply.
export function contextUsed(reply) {
  if (reply.usage && Number.isFinite(reply.usage.total_tokens)) return reply.usage.total_tokens;
  const t = reply.timings;
  if (t) return (t.cache_n || 0) + (t.prompt_n || 0) + (t.predicted_n || 0);
  return null;
}
